// Where the service may reach out (lib/integrations/vendor-http.ts `vendorUrlProblem`) and which directories
// may be a storage or Git root (lib/integrations/storage-roots.ts): the rules every bootstrap section applies.
import t from 'tap';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storageRootProblem } from '../../../lib/integrations/storage-roots.ts';
import { VendorClient, VendorError, vendorUrlProblem } from '../../../lib/integrations/vendor-http.ts';

const strict = { allowLinkLocal: false };
const lenient = { allowLinkLocal: true };

t.test('https is accepted; plain http only to a loopback address', async (t) => {
  for (const url of ['https://eln.example.org', 'https://eln.example.org:8443/api/', 'https://10.0.0.5', 'http://127.0.0.1:9/eln', 'http://localhost:3000', 'http://[::1]:8080']) {
    t.equal(vendorUrlProblem(url, strict), undefined, url);
  }
  for (const url of ['http://eln.example.org', 'http://10.0.0.5', 'http://127.0.0.1.example.org']) {
    t.match(vendorUrlProblem(url, strict), /https URL \(plain http is allowed to a loopback address only\)/, url);
  }
});

t.test('other schemes, non-URLs and URLs with credentials are refused', async (t) => {
  for (const url of ['file:///etc/passwd', 'gopher://127.0.0.1:6379/_INFO', 'ftp://files.example.org', 'javascript:alert(1)', 'data:text/plain,x', 'ldap://x']) {
    t.match(vendorUrlProblem(url, lenient), /^must be an https URL/, url);
  }
  for (const value of ['', 'eln.example.org', '/relative', 42, null]) t.equal(vendorUrlProblem(value, lenient), 'must be an https URL', String(value));
  t.match(vendorUrlProblem('https://admin:hunter2@eln.example.org', strict), /must not contain a user name or password/);
  t.notMatch(vendorUrlProblem('https://admin:hunter2@eln.example.org', strict)!, 'hunter2', 'the value is never echoed');
});

t.test('link-local and cloud metadata addresses are refused unless the setting allows them', async (t) => {
  const addresses = [
    'https://169.254.169.254/latest/meta-data/',
    'https://169.254.10.20',
    'https://metadata.google.internal/computeMetadata/v1/',
    'https://METADATA.google.internal./',
    'https://[fd00:ec2::254]/',
    'https://[fe80::1]/',
    'https://[febf::1]/',
    'https://[::ffff:169.254.169.254]/',
    'https://2852039166/', // 169.254.169.254 as one number
    'https://0xa9.0xfe.0xa9.0xfe/',
    'https://100.100.100.200/',
  ];
  for (const url of addresses) {
    t.match(vendorUrlProblem(url, strict), /link-local or cloud metadata address \(set LABDATA_VENDOR_ALLOW_LINK_LOCAL=true/, url);
    t.equal(vendorUrlProblem(url, lenient), undefined, `${url} with the setting`);
  }
  t.ok(vendorUrlProblem('http://169.254.169.254/', lenient), 'the setting never allows plain http to a non-loopback address');
  t.equal(vendorUrlProblem('https://[fec0::1]/', strict), undefined, 'fec0:: is not fe80::/10');
  t.equal(vendorUrlProblem('https://169.255.0.1/', strict), undefined);
});

t.test('the vendor client refuses a stored base URL with another scheme before calling it', async (t) => {
  for (const baseUrl of ['file:///etc/', 'gopher://127.0.0.1:70/', 'http://eln.example.org/']) {
    let error: unknown;
    try {
      new VendorClient({ vendor: 'ELN A', baseUrl });
    } catch (err) {
      error = err;
    }
    t.ok(error instanceof VendorError && error.status === 400 && !error.transient, `${baseUrl}: a VendorError no retry fixes`);
  }
  t.doesNotThrow(() => new VendorClient({ vendor: 'ELN A', baseUrl: 'http://127.0.0.1:9' }));
});

t.test('a storage or Git root is never the filesystem root or a system directory', async (t) => {
  for (const dir of ['/', '//', '/etc', '/etc/', '/etc/ssl', '/usr', '/usr/local/share', '/bin', '/proc', '/proc/self/root', '/sys', '/dev', '/dev/shm', '/boot', '/var', '/home', '/root', '/srv/../etc', '/lib64']) {
    t.match(storageRootProblem(dir), /must not be (the filesystem root|the system directory|in the system directory)/, dir);
  }
  for (const dir of ['/srv/lab-nas', '/var/lib/labdata/storage', '/home/lab/data', '/mnt/nas', '/data']) t.equal(storageRootProblem(dir), undefined, dir);
  for (const value of ['relative/dir', '', 7]) t.equal(storageRootProblem(value), 'must be an absolute path');
  const dir = mkdtempSync(join(tmpdir(), 'roots-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync('/etc', join(dir, 'innocent'));
  t.equal(storageRootProblem(join(dir, 'innocent')), 'must not be in the system directory /etc', 'a symlink is judged by its target');
  t.equal(storageRootProblem(dir), undefined);
});
