/**
 * Seeds the sizes of a real tenant for `npm run bench`, the way an operator moves data in from
 * another system: bulk SQL with triggers off, then a recount (core/counters).
 *
 * - 100,000 projects in 4 organizations (50/30/15/5 %), visibility 40/35/25 % PUBLIC/PROTECTED/
 *   PRIVATE, each created by one of 100 users of its organization, who is a member of it;
 * - a non-admin user who is a member of every 10th project of the biggest organization, and an
 *   admin there;
 * - 1,000,000 activity records in the biggest organization (2 % without a project);
 * - `memberFactor` × 100,000 memberships in all (factor 10: 900,000 more grants of other users).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { CounterService } from '../core/counters/index.ts';
import { recount } from '../app/db/recount.ts';
import { addMembership, createOrganization, createUser, issueKey } from '../app/cli/admin.ts';

export interface SeedOptions {
  projects: number;
  activity: number;
  /** The share of activity records that name a further record (another project), as moves, relationships and collections do: 0 by default. */
  refShare?: number;
  memberFactor: number;
  log: (line: string) => void;
}

export interface Seeded {
  /** The 4 organizations, biggest first. */
  organizationIds: string[];
  organizationId: string;
  memberKey: string;
  adminKey: string;
  /** A PRIVATE project the member is granted (the permission path with the most work). */
  projectId: string;
  /** The member's organization user (creates are recorded for it). */
  memberOrganizationUserId: string;
  /** 200 projects the member is granted, spread over visibilities (creates go there). */
  memberProjects: string[];
  memberships: number;
}

const SHARES = [0.5, 0.3, 0.15, 0.05];

export async function seed(em: EntityManager, counters: CounterService, opts: SeedOptions): Promise<Seeded> {
  const step = async (label: string, run: () => Promise<unknown>) => {
    const began = Date.now();
    await run();
    opts.log(`seed: ${label} (${((Date.now() - began) / 1000).toFixed(1)} s)`);
  };
  const orgs: string[] = [];
  const keys = await em.transactional(async (tx) => {
    for (const [i] of SHARES.entries()) orgs.push(createOrganization(tx, `Bench ${i + 1}`).id);
    const stamp = Date.now();
    const member = await createUser(tx, `member-${stamp}@bench.test`, 'Bench member');
    const admin = await createUser(tx, `admin-${stamp}@bench.test`, 'Bench admin');
    addMembership(tx, { organizationId: orgs[0], userId: member.id, roles: ['ORGANIZATION_USER'], status: 'ACTIVE' });
    addMembership(tx, { organizationId: orgs[0], userId: admin.id, roles: ['ORGANIZATION_ADMIN'], status: 'ACTIVE' });
    await tx.flush();
    const memberKey = await issueKey(tx, { userId: member.id, organizationId: orgs[0], name: 'bench', days: 7 }, true);
    const adminKey = await issueKey(tx, { userId: admin.id, organizationId: orgs[0], name: 'bench', days: 7 }, true);
    return { memberKey: memberKey.key, adminKey: adminKey.key, memberUserId: member.id };
  });
  const [{ id: memberOu }] = await em.execute('select id from organization_user where user_id = ?', [keys.memberUserId]);

  await em.transactional(async (tx) => {
    // A bulk load: no triggers, no deferred checks; counted by the recount below.
    await tx.execute('set local session_replication_role = replica');
    await step('users', async () => {
      for (const org of orgs) {
        await tx.execute(
          `with u as (insert into app_user (id, email, display_name)
                      select gen_random_uuid(), format('u%s-%s@bench.test', g, ?::text), 'User ' || g from generate_series(1, 100) g returning id)
           insert into organization_user (id, organization_id, user_id, roles, status)
           select gen_random_uuid(), ?, u.id, '{ORGANIZATION_USER}', 'ACTIVE' from u`, [org, org]);
      }
    });
    await step(`${opts.projects} projects`, async () => {
      for (const [i, org] of orgs.entries()) {
        await tx.execute(
          `insert into project (id, organization_id, code, name, description, visibility, status, archived, created_by_id, created_at, updated_at)
           select gen_random_uuid(), ?, 'P-' || g, 'Project ' || g, 'Seeded',
                  case when (g / 10) % 20 < 8 then 'PUBLIC' when (g / 10) % 20 < 15 then 'PROTECTED' else 'PRIVATE' end,
                  'ACTIVE', false, x.ous[1 + g % array_length(x.ous, 1)], now() - g * interval '1 second', now() - g * interval '1 second'
             from generate_series(1, ?) g,
                  (select array_agg(ou.id order by ou.id) ous from organization_user ou join app_user u on u.id = ou.user_id
                    where ou.organization_id = ? and u.email like 'u%@bench.test') x`,
          [org, Math.round(opts.projects * SHARES[i]), org]);
      }
    });
    await step('memberships', async () => {
      await tx.execute(
        `insert into project_member (id, organization_id, project_id, organization_user_id)
         select gen_random_uuid(), organization_id, id, created_by_id from project where description = 'Seeded'`);
      await tx.execute(
        `insert into project_member (id, organization_id, project_id, organization_user_id)
         select gen_random_uuid(), organization_id, id, ? from project
          where organization_id = ? and description = 'Seeded' and substr(code, 3)::int % 10 = 7`, [memberOu, orgs[0]]);
      // Other users' grants, to show the caller's cost does not grow with the table.
      for (let r = 1; r < opts.memberFactor; r++) {
        await tx.execute(
          `insert into project_member (id, organization_id, project_id, organization_user_id)
           select gen_random_uuid(), p.organization_id, p.id, x.ous[1 + (p.n + ?) % array_length(x.ous, 1)]
             from (select id, organization_id, row_number() over () as n from project where description = 'Seeded') p
             join (select ou.organization_id, array_agg(ou.id order by ou.id) as ous from organization_user ou
                     join app_user u on u.id = ou.user_id where u.email like 'u%@bench.test' group by 1) x
               on x.organization_id = p.organization_id
           on conflict do nothing`, [r * 7]);
      }
    });
    await step(`${opts.activity} activity records`, () => insertActivity(tx, orgs[0], opts.activity, opts.refShare));
  });
  await step('labdata recount', () => recount(counters, em.fork()));
  await step('vacuum analyze', () => em.execute('vacuum analyze'));
  const [{ n }] = await em.execute('select count(*)::int as n from project_member');
  const [{ id: projectId }] = await em.execute(
    `select p.id from project p join project_member pm on pm.project_id = p.id and pm.organization_user_id = ?
      where p.visibility = 'PRIVATE' order by p.created_at desc limit 1`, [memberOu]);
  const memberProjects = (await em.execute(
    `select p.id from project p join project_member pm on pm.project_id = p.id and pm.organization_user_id = ? order by p.id limit 200`, [memberOu])).map((r) => r.id as string);
  return { organizationIds: orgs, organizationId: orgs[0], memberKey: keys.memberKey, adminKey: keys.adminKey, projectId, memberOrganizationUserId: memberOu, memberProjects, memberships: n };
}

/**
 * One INSERT … SELECT of `n` activity records in `organizationId`, spread over its projects
 * (2 % without one) and users: the seed's load, and bench/bulk.ts's with triggers on and off.
 * A `refShare` of them (of those with a project) name another project of the organization.
 */
export async function insertActivity(em: EntityManager, organizationId: string, n: number, refShare = 0): Promise<void> {
  const every = refShare > 0 ? Math.max(1, Math.round(1 / refShare)) : 0;
  await em.execute(
    `insert into activity (id, organization_id, event_type, category, data, date, project_id, organization_user_id, ref_kind, ref_id)
     select gen_random_uuid(), ?, 'project.updated', (array['RESEARCH','GOVERNANCE','ADMINISTRATIVE'])[1 + g % 3], '{}'::jsonb,
            now() - g * interval '100 milliseconds',
            case when g % 50 = 0 then null else x.pids[1 + (g::bigint * 7919) % array_length(x.pids, 1)] end,
            y.ous[1 + g % array_length(y.ous, 1)],
            case when r.named then 'project' end,
            case when r.named then x.pids[1 + (g::bigint * 104729) % array_length(x.pids, 1)] end
       from generate_series(1, ?) g
            cross join lateral (select ?::int > 0 and g % 50 <> 0 and g % greatest(?::int, 1) = 1 % greatest(?::int, 1) as named) r,
            (select array_agg(id) pids from project where organization_id = ?) x,
            (select array_agg(id) ous from organization_user where organization_id = ?) y`,
    [organizationId, n, every, every, every, organizationId, organizationId]);
}
