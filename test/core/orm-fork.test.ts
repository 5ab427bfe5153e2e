// Each request forks its own EntityManager (core/db/orm.ts). MikroORM re-syncs its configuration
// on every fork, writing process.env each time; the ORM the service creates must not (issue
// "Stock PostgreSQL and the write path", point 7: nothing per request that need not be).
import t from 'tap';
import { startTestServer, testCast } from '../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects'] });
const { admin } = await testCast(server, ['Forked', 'Other']);

t.test('forks and requests leave the process environment alone', async (t) => {
  delete process.env.MIKRO_ORM_COLORS;
  server.orm.em.fork();
  const res = await server.get('/api/v1/projects', { key: admin.key });
  t.equal(res.status, 200);
  t.equal(process.env.MIKRO_ORM_COLORS, undefined, 'no environment write per fork');
});

t.test('the ORM still logs and queries after init (its synced settings stay)', async (t) => {
  const rows = await server.orm.em.fork().execute('select 1 as one');
  t.same(rows, [{ one: 1 }]);
});
