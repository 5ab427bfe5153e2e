import type { counters } from '../../core/public.ts';

/** This plugin's part of `labdata recount` (core/counters): assays per class, per study and per project. */
export const assayCounters: counters.CounterSource = {
  plugin: 'assays',
  statements: [
    `insert into visibility_count (organization_id, kind, class, n)
       select a.organization_id, 'assay', coalesce(p.visibility, 'DELETED'), count(*)
         from assay a left join study s on s.id = a.study_id left join project p on p.id = s.project_id group by 1, 3`,
    `insert into record_count (record_id, kind, n) select study_id, 'assay', count(*) from assay group by 1`,
    `insert into record_count (record_id, kind, n)
       select s.project_id, 'assay', count(*) from assay a join study s on s.id = a.study_id group by 1`,
  ],
};
