import t from 'tap';
import { HttpElnAConnector } from '../../../plugins/eln-a/connector.ts';
import { VendorError } from '../../../lib/integrations/index.ts';
import { startElnAStub } from '../../support/stubs/eln-a.ts';

t.test('the ELN A connector speaks the vendor API with the bearer token', async (t) => {
  const stub = await startElnAStub(t);
  const root = stub.addFolder('Root');
  stub.addTemplate('tpl-1', 'Protocol', ['compound']);
  const eln = new HttpElnAConnector({ baseUrl: stub.url, secret: stub.token });

  t.equal(await eln.folderExists(root.id), true);
  t.equal(await eln.folderExists('nope'), false);
  t.same(await eln.template('tpl-1'), { id: 'tpl-1', fields: ['compound'] });
  t.equal(await eln.template('nope'), null);

  const folder = await eln.createFolder({ parentId: root.id, name: 'Study 1' }, 'key-1');
  const entry = await eln.createEntry({ folderId: folder.id, name: 'Study 1', templateId: 'tpl-1', fields: { compound: 'X' } }, 'key-2');
  t.match(stub.folders.get(folder.id), { name: 'Study 1', parentId: root.id });
  t.match(stub.entries.get(entry.id), { folderId: folder.id, templateId: 'tpl-1', fields: { compound: 'X' } });

  const [post] = stub.calls('POST', '/api/folders');
  t.equal(post.headers.authorization, `Bearer ${stub.token}`);
  t.equal(post.headers['idempotency-key'], 'key-1');
  t.same(post.body, { parentId: root.id, name: 'Study 1' });
  t.ok(stub.requests.every((r) => r.headers.authorization === `Bearer ${stub.token}`));
});

t.test('a repeated idempotency key returns the first folder instead of a second one', async (t) => {
  const stub = await startElnAStub(t);
  const root = stub.addFolder('Root');
  const eln = new HttpElnAConnector({ baseUrl: stub.url, secret: stub.token });
  // The vendor creates the folder but the response is lost: the retry must not create another.
  stub.fail({ mode: 'after', match: (r) => r.method === 'POST' });
  t.match(await eln.createFolder({ parentId: root.id, name: 'S' }, 'same').catch((e: unknown) => e), { status: 500 });
  const again = await eln.createFolder({ parentId: root.id, name: 'S' }, 'same');
  t.equal(stub.childrenOf(root.id).length, 1);
  t.equal(stub.childrenOf(root.id)[0].id, again.id);
});

t.test('vendor failures become VendorErrors that say whether a retry may help', async (t) => {
  const stub = await startElnAStub(t);
  const eln = new HttpElnAConnector({ baseUrl: stub.url, secret: stub.token });
  stub.fail({ status: 503 });
  const err = await eln.folderExists('x').catch((e: unknown) => e);
  t.ok(err instanceof VendorError);
  t.match(err, { status: 503, transient: true, message: /ELN A GET \/api\/folders\/x failed: HTTP 503/ });

  stub.down();
  t.match(await eln.folderExists('x').catch((e: unknown) => e), { status: null, transient: true, message: /unreachable/ });
  stub.recover();

  const wrongToken = new HttpElnAConnector({ baseUrl: stub.url, secret: 'wrong' });
  t.match(await wrongToken.folderExists('x').catch((e: unknown) => e), { status: 401, transient: false });

  const gone = await startElnAStub(t);
  await gone.close();
  const closed = new HttpElnAConnector({ baseUrl: gone.url, secret: 't' });
  t.match(await closed.folderExists('x').catch((e: unknown) => e), { status: null, message: /unreachable \(ECONNREFUSED\)/ });
});
