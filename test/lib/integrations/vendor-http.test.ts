// A vendor's error text travels into 400s, activity records and logs: the credentials the call
// sent must not travel with it, even when the vendor echoes the request's headers back.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { VendorClient, VendorError } from '../../../lib/integrations/vendor-http.ts';

const echo = http.createServer((req, res) => {
  res.writeHead(403, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ message: `denied for ${JSON.stringify(req.headers)}` }));
});
await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
t.teardown(() => echo.close());
const baseUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/`;

t.test('a vendor that echoes the auth headers: its message keeps the rest, never the credential', async (t) => {
  for (const headers of [{ authorization: 'Bearer SECRET-TOKEN-123' }, { 'x-api-key': 'SECRET-KEY-456' }] as Record<string, string>[]) {
    const client = new VendorClient({ vendor: 'Echo', baseUrl, timeoutMs: 5_000, headers });
    const err = await client.request('GET', 'api/folders/x').then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof VendorError, 'a VendorError');
    const message = (err as VendorError).message;
    t.match(message, /^Echo GET \/api\/folders\/x failed: HTTP 403: denied for/, 'the vendor\'s reason is kept');
    t.notMatch(message, /SECRET-(TOKEN|KEY)/, 'without the credential');
    t.match(message, /\[REDACTED\]/);
  }
});
