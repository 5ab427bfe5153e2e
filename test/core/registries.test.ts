import t from 'tap';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../../app/config.ts';
import { assembleKernel } from '../../core/kernel/kernel.ts';
import { defineRead, definePlugin, Type } from '../../core/public.ts';
import type { RegisterContext } from '../../core/kernel/plugin.ts';

// Start-up ends when the last plugin's register returns: every kernel registry is frozen then,
// so a registration that arrives later (from a request handler, a timer) throws instead of
// reaching some requests and not others.
t.test('registries freeze when start-up ends: a late registration throws a clear Error', async (t) => {
  let kept: RegisterContext | undefined;
  let frozeAt: boolean | undefined;
  const probe = definePlugin({
    name: 'late-probe',
    version: '0.0.0',
    setup(ctx) {
      // How a library freezes its own registry: a hook on the end of start-up.
      ctx.services.startup.onEnded(() => (frozeAt = ctx.services.startup.ended));
    },
    register(ctx) {
      kept = ctx;
      t.equal(ctx.services.startup.ended, false, 'still starting while plugins register');
    },
  });
  const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
  const kernel = assembleKernel(loadConfig({ LABDATA_DATA_DIR: t.testdir() }), [probe], log);
  const { services } = kernel;
  t.equal(services.startup.ended, true, 'ended once assembled');
  t.equal(frozeAt, true, 'a hook added in setup ran when start-up ended');
  let hooked = false;
  services.startup.onEnded(() => (hooked = true));
  t.ok(hooked, 'a hook added after the end runs at once (a library freezing its registry)');

  const late = /registered after start-up ended: register it in the plugin's setup or register$/;
  const read = defineRead({ name: 'late_read', description: 'late', path: '/late', response: Type.Object({}), run: async () => ({}) });
  t.throws(() => kept!.read(read), { message: late }, 'operation (REST route and MCP tool)');
  t.throws(() => services.jobs.define('late-probe', { name: 'late-probe.job', handler: async () => {} }), { message: /^job definition late-probe.job registered after start-up ended/ });
  t.throws(() => services.counters.register({ plugin: 'late-probe', statements: [] }), { message: /^counters of late-probe registered after/ });
  t.throws(() => services.activity.declare('late-probe', { LATE_EVENT: 'RESEARCH' }), { message: /^event types of late-probe registered after/ });
  t.throws(() => services.activity.reference('late-probe', 'late', () => undefined as never), { message: /^activity reference kind late registered after/ });
  t.equal(kernel.reads.length, 0, 'nothing was added');
});
