import t from 'tap';
import { Startup } from '../../../core/kernel/startup.ts';
import { raw, type KernelServices } from '../../../core/public.ts';
import { parentKinds, RecordExtensions } from '../../../lib/records/index.ts';

const kind = (name: string) => ({
  kind: name,
  segment: `${name}s`,
  label: name,
  table: name,
  access: async () => { throw new Error('unused'); },
  lockedAccess: async () => { throw new Error('unused'); },
  visible: () => raw('true'),
  beforeDelete: () => {},
});

t.test('the parent registry is per kernel and closes when start-up ends', async (t) => {
  const startup = new Startup();
  const services = { startup } as unknown as KernelServices;
  const other = { startup: new Startup() } as unknown as KernelServices;
  parentKinds(services).register('one', kind('thing'));
  t.equal(parentKinds(services).get('thing')?.kind, 'thing');
  t.equal(parentKinds(other).get('thing'), undefined, 'another kernel does not see it');
  startup.end();
  t.throws(() => parentKinds(services).register('late', kind('other')), /plugin late registered parent kind other after start-up/);
});

t.test('record extensions refuse contributions once frozen', async (t) => {
  const extensions = new RecordExtensions<{ id: string }>('thing');
  extensions.addOutput({ name: 'a', plugin: 'p', schema: {} as never, select: () => raw('null') });
  extensions.freeze();
  t.throws(() => extensions.addOutput({ name: 'b', plugin: 'late', schema: {} as never, select: () => raw('null') }), /late added response field "b" to thing records after start-up/);
  t.throws(() => extensions.beforeDelete(async () => {}), /after start-up/);
});
