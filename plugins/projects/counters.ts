import type { counters } from '../../core/public.ts';

/**
 * This plugin's part of `labdata recount` (core/counters): projects per class, and activity,
 * whose class is its project's visibility (NONE without a project, DELETED once it is gone).
 */
export const projectCounters: counters.CounterSource = {
  plugin: 'projects',
  // Grants carry their project's visibility; a load may leave it unset. The projects are locked
  // (only those with a stale grant, 500 at a time) so that a visibility change meanwhile is not undone.
  repairs: [
    `update project_member pm set project_visibility = p.visibility
       from (select id, visibility from project
              where id in (select g.project_id from project_member g join project q on q.id = g.project_id
                            where g.project_visibility is distinct from q.visibility limit 500)
                for share) p
      where p.id = pm.project_id and pm.project_visibility is distinct from p.visibility`,
  ],
  statements: [
    `insert into visibility_count (organization_id, kind, class, n)
       select organization_id, 'project', visibility, count(*) from project group by 1, 3`,
    `insert into visibility_count (organization_id, kind, class, category, actor_id, n)
       select a.organization_id, 'activity', case when a.project_id is null then 'NONE' else coalesce(p.visibility, 'DELETED') end,
              a.category, x.actor_id, count(*)
         from activity a left join project p on p.id = a.project_id
        cross join lateral (values ('00000000-0000-0000-0000-000000000000'::uuid), (a.organization_user_id)) x (actor_id)
        group by 1, 3, 4, 5`,
    `insert into record_count (record_id, kind, category, n)
       select x.record_id, 'activity', a.category, count(*)
         from activity a cross join lateral (values (a.project_id), (a.study_id), (a.assay_id)) x (record_id)
        where x.record_id is not null group by 1, 3`,
  ],
  // Per grant holder (migration projects-0004): the rebuilt counts of the PRIVATE projects it is granted.
  counters: ['grant_count'],
  derived: [
    `insert into grant_count (holder_id, kind, category, n)
       select coalesce(pm.organization_user_id, pm.team_id), x.kind, x.category, sum(x.n)
         from project_member pm join project p on p.id = pm.project_id and p.visibility = 'PRIVATE'
        cross join lateral (select 'project' as kind, '' as category, 1::bigint as n
                            union all select kind, category, n from record_count where record_id = p.id) x
        group by 1, 2, 3`,
  ],
};
