// Self-signed TLS material for local HTTPS: generated once per data directory and reused,
// so a restarted server keeps the certificate clients may already trust.
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export interface Certificate {
  /** PEM certificate */
  cert: string;
  /** PEM private key (PKCS#8) */
  key: string;
}

const TEN_YEARS_MS = 10 * 365 * 24 * 60 * 60 * 1000;

/**
 * A self-signed EC P-256 certificate for CN=localhost, valid for localhost, 127.0.0.1 and ::1.
 * Being self-signed, it is its own trust anchor: a client trusts it by adding the certificate
 * itself to its CA list (for Node: `NODE_EXTRA_CA_CERTS=<cert.pem>`).
 */
export async function generateSelfSignedCertificate(): Promise<Certificate> {
  // Back-date a little so a client whose clock is slightly behind does not see "not yet valid".
  const notBeforeDate = new Date(Date.now() - 60 * 60 * 1000);
  const notAfterDate = new Date(notBeforeDate.getTime() + TEN_YEARS_MS);
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/**
 * Returns the certificate stored in `<dataDir>/tls/`, generating it on first use.
 * The key file is written with mode 0600 because it is a private key.
 */
export async function ensureCertificate(dataDir: string): Promise<Certificate> {
  const dir = join(dataDir, 'tls');
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  const existing = await readPair(certPath, keyPath);
  if (existing) return existing;

  const fresh = await generateSelfSignedCertificate();
  // Written aside, then renamed into place in one step: of servers starting together on a fresh
  // data dir, the first rename wins and the others serve its pair (a directory is not renamed
  // over one that holds files).
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const aside = await mkdtemp(join(dataDir, '.tls-'));
  try {
    await writeFile(join(aside, 'key.pem'), fresh.key, { mode: 0o600 });
    await writeFile(join(aside, 'cert.pem'), fresh.cert, { mode: 0o644 });
    await rename(aside, dir);
    return fresh;
  } catch (err) {
    // ENOTDIR: `tls` is a link to a directory of the operator's; the files are written into it below.
    if (!['ENOTEMPTY', 'EEXIST', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
  const theirs = await readPair(certPath, keyPath);
  if (theirs) return theirs;
  // Half a pair (a start interrupted between the two files by an older version): replace it.
  // Key first: a cert.pem without its key would be useless on the next start.
  await writeFile(keyPath, fresh.key, { mode: 0o600 });
  await chmod(keyPath, 0o600); // mode is ignored when the file already existed
  await writeFile(certPath, fresh.cert, { mode: 0o644 });
  return fresh;
}

/** Both files, or undefined when either is missing (a half-written pair is regenerated). */
async function readPair(certPath: string, keyPath: string): Promise<Certificate | undefined> {
  try {
    const [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    return { cert, key };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
