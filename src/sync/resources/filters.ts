import { FILTERS } from '../../platform/listings.ts';
import type { ReportingFilter } from '../../platform/schemas.ts';
import type { SnapshotResource } from './resource.ts';

/**
 * Reporting filters and their answers: a full snapshot each run; vanished filters and
 * answers get removed_at. Counts are per filter: a filter whose only change is a new or
 * changed answer counts as updated.
 */
export const filters: SnapshotResource<ReportingFilter> = {
  name: 'filters',
  kind: 'snapshot',
  cron: '0 2 * * *',
  endpoint: FILTERS,
  table: {
    table: 'training.reporting_filters',
    key: ['filter_id'],
    columns: [['name', 'text']],
    row: (f) => ({ filter_id: f.id, name: f.name }),
    children: [
      {
        kind: 'listed',
        table: {
          table: 'training.reporting_filter_answers',
          idColumn: 'answer_id',
          columns: [
            ['filter_id', 'uuid'],
            ['answer', 'text'],
          ],
        },
        parentColumn: 'filter_id',
        rows: (f) => f.answers.map((a) => ({ answer_id: a.id, filter_id: f.id, answer: a.answer })),
      },
    ],
  },
};
