// The database topology settings (docs/configuration.md): read replicas and a pooler. A bad value
// stops start-up with one line naming the variable; none set is the single-server deployment.
import t from 'tap';
import { ConfigError, databaseTopology, loadConfig } from '../../app/config.ts';

const url = 'postgres://labdata@db/labdata';

t.test('nothing set: one server, as before', async (t) => {
  t.same(databaseTopology({}), { readUrls: [], readMaxLagMs: 1000, pooled: false, directUrl: undefined });
});

t.test('replicas and a pooler', async (t) => {
  t.same(databaseTopology({
    LABDATA_DATABASE_URL: url,
    LABDATA_DATABASE_READ_URLS: ' postgres://s1/labdata, postgresql://s2/labdata ',
    LABDATA_READ_MAX_LAG_MS: '250',
    LABDATA_DATABASE_POOLER: 'Transaction',
    LABDATA_DATABASE_DIRECT_URL: 'postgres://primary/labdata',
  }), { readUrls: ['postgres://s1/labdata', 'postgresql://s2/labdata'], readMaxLagMs: 250, pooled: true, directUrl: 'postgres://primary/labdata' });
});

t.test('bad values are one line naming the variable, at start-up', async (t) => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ LABDATA_DATABASE_URL: url, LABDATA_DATABASE_READ_URLS: 'https://s1' }, /LABDATA_DATABASE_READ_URLS must be comma-separated postgres:\/\/ URLs/],
    [{ LABDATA_DATABASE_URL: url, LABDATA_READ_MAX_LAG_MS: '1s' }, /LABDATA_READ_MAX_LAG_MS must be a whole number/],
    [{ LABDATA_DATABASE_URL: url, LABDATA_DATABASE_POOLER: 'session' }, /LABDATA_DATABASE_POOLER must be "transaction"/],
    [{ LABDATA_DATABASE_URL: url, LABDATA_DATABASE_POOLER: 'transaction' }, /needs LABDATA_DATABASE_DIRECT_URL/],
    [{ LABDATA_DATABASE_READ_URLS: 'postgres://s1/x' }, /LABDATA_DATABASE_READ_URLS needs LABDATA_DATABASE_URL/],
    [{ LABDATA_DATABASE_URL: url, LABDATA_DATABASE_POOLER: 'transaction', LABDATA_DATABASE_DIRECT_URL: 'nope' }, /LABDATA_DATABASE_DIRECT_URL must be a postgres:\/\/ URL/],
  ];
  for (const [env, message] of bad) {
    const err = (() => {
      try {
        loadConfig(env);
      } catch (e) {
        return e as Error;
      }
    })();
    t.ok(err instanceof ConfigError, `refused: ${JSON.stringify(env)}`);
    t.match(err?.message, message);
  }
  t.notMatch(String((() => { try { loadConfig({ LABDATA_DATABASE_URL: url, LABDATA_DATABASE_READ_URLS: 'mysql://u:secret@h/x' }); } catch (e) { return e; } })()), /secret/, 'a password in a bad URL is not repeated');
});
