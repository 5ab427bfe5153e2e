// The outbound address checks of lib/integrations (outbound.ts, for URLs an organization gives):
// address classes from ipaddr.js, a host judged on every address it resolves to, and a `lookup`
// that refuses the connection.
import http from 'node:http';
import t from 'tap';
import { addressProblem, checkedLookup, hostProblem } from '../../../lib/integrations/index.ts';

const publicOnly = { public: true, private: false };
const privateToo = { public: true, private: true };
const privateOnly = { public: false, private: true };

t.test('address classes', async (t) => {
  t.equal(addressProblem('8.8.8.8', publicOnly), undefined);
  t.equal(addressProblem('2001:4860:4860::8888', publicOnly), undefined);
  for (const [address, message] of [
    ['127.0.0.1', /loopback/], ['::1', /loopback/], ['10.0.0.1', /private/], ['172.16.5.4', /private/], ['192.168.1.1', /private/],
    ['fd12::1', /private/], ['::ffff:10.0.0.1', /private/], ['100.64.0.1', /private/],
    ['169.254.169.254', /metadata/], ['100.100.100.200', /metadata/], ['fd00:ec2::254', /metadata/], ['169.254.1.1', /link-local/], ['fe80::1', /link-local/],
    ['0.0.0.0', /not a routable/], ['224.0.0.1', /not a routable/], ['255.255.255.255', /not a routable/], ['64:ff9b::a00:1', /not a routable/], ['nonsense', /not an IP/],
  ] as const) t.match(addressProblem(address, publicOnly), message, address);
  t.equal(addressProblem('10.0.0.1', privateToo), undefined, 'private allowed by the policy');
  t.equal(addressProblem('127.0.0.1', privateToo), undefined);
  t.match(addressProblem('169.254.169.254', privateToo), /metadata/, 'metadata never');
  t.match(addressProblem('8.8.8.8', privateOnly), /public address/, 'plain http: private addresses only');
});

t.test('a host name is judged on what it resolves to', async (t) => {
  t.match(await hostProblem('localhost', publicOnly), /resolves to an address that is a loopback address/);
  t.equal(await hostProblem('localhost', privateToo), undefined);
  t.match(await hostProblem('metadata.google.internal', privateToo), /metadata/);
  t.match(await hostProblem('no-such-host.invalid', publicOnly), /does not resolve/);
});

t.test('checkedLookup refuses the connection itself: no request leaves', async (t) => {
  let reached = 0;
  const target = http.createServer((_req, res) => (reached++, res.end('ok')));
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => target.close(resolve)));
  const { port } = target.address() as { port: number };
  const get = (policy: typeof publicOnly) => new Promise<number | string>((resolve) => {
    http.get({ host: 'localhost', port, lookup: checkedLookup(policy), family: 4 }, (res) => (res.resume(), resolve(res.statusCode!)))
      .on('error', (err: NodeJS.ErrnoException) => resolve(err.code!));
  });
  t.equal(await get(publicOnly), 'EADDRREFUSED');
  t.equal(reached, 0);
  t.equal(await get(privateToo), 200, 'allowed: connected to the address checked');
  t.equal(reached, 1);
});
