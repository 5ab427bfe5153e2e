import type { counters } from '../../core/public.ts';

/** This plugin's part of `labdata recount` (core/counters): studies per class and per project. */
export const studyCounters: counters.CounterSource = {
  plugin: 'studies',
  statements: [
    `insert into visibility_count (organization_id, kind, class, n)
       select s.organization_id, 'study', coalesce(p.visibility, 'DELETED'), count(*)
         from study s left join project p on p.id = s.project_id group by 1, 3`,
    `insert into record_count (record_id, kind, n) select project_id, 'study', count(*) from study group by 1`,
  ],
};
