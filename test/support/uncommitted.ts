import type { Response, TestServer } from './server.ts';

/**
 * Sends `request` while another transaction holds `statement` (e.g. an organization user's
 * deactivation) uncommitted, and commits it once the request waits for a row lock or has
 * answered: a request that locks what it checks answers as after the change, one that does not
 * answers at once from the old state. Used by the teams and project-access tests.
 */
export async function whileUncommitted(server: TestServer, statement: string, params: unknown[], request: () => Promise<Response>): Promise<Response> {
  let pending!: Promise<Response>;
  await server.orm.em.fork().transactional(async (tx) => {
    await tx.execute(statement, params);
    let answered = false;
    pending = request().finally(() => (answered = true));
    await server.waitFor(async () => answered || (await server.sql(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).length > 0, 5000, 'the request to answer or wait for a lock');
  });
  return pending;
}
