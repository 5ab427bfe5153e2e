import fs from 'node:fs';
import t from 'tap';
import { startTestServer } from '../support/server.ts';
const server = await startTestServer(t);
const member = await server.member(await server.organization());
const res = await server.get('/docs/api-docs/public-v1', { key: member.key });
fs.writeFileSync('/tmp/h-openapi/doc.json', JSON.stringify(res.body, null, 2));
t.pass();
