import t from 'tap';
import { HttpElnBConnector } from '../../../plugins/eln-b/connector.ts';
import { startElnBStub } from '../../support/stubs/eln-b.ts';

t.test('the ELN B connector speaks the vendor API with the API key', async (t) => {
  const stub = await startElnBStub(t);
  const container = stub.addProject('Lab');
  const eln = new HttpElnBConnector({ baseUrl: stub.url, secret: stub.apiKey });

  t.equal(await eln.projectExists(container.id), true);
  t.equal(await eln.projectExists(999999), false);
  const entry = await eln.createEntry(container.id, { title: 'Study 1' }, 'key-1');
  t.same(stub.entries.get(entry.id), { id: entry.id, projectId: container.id, title: 'Study 1' });

  const [post] = stub.calls('POST', `/api/projects/${container.id}/entries`);
  t.equal(post.headers['x-api-key'], stub.apiKey);
  t.equal(post.headers['idempotency-key'], 'key-1');
  t.same(post.body, { title: 'Study 1' });
});

t.test('a repeated idempotency key returns the first entry instead of a second one', async (t) => {
  const stub = await startElnBStub(t);
  const container = stub.addProject('Lab');
  const eln = new HttpElnBConnector({ baseUrl: stub.url, secret: stub.apiKey });
  stub.fail({ mode: 'after', match: (r) => r.method === 'POST' });
  t.match(await eln.createEntry(container.id, { title: 'S' }, 'same').catch((e: unknown) => e), { status: 500 });
  const again = await eln.createEntry(container.id, { title: 'S' }, 'same');
  t.same(stub.entriesIn(container.id).map((e) => e.id), [again.id]);
});

t.test('a wrong API key is refused by the vendor', async (t) => {
  const stub = await startElnBStub(t);
  const eln = new HttpElnBConnector({ baseUrl: stub.url, secret: 'wrong' });
  t.match(await eln.projectExists(1).catch((e: unknown) => e), { status: 401, transient: false });
});
