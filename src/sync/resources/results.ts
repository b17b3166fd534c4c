import { normaliseGuid, resultSchema, type Result } from '../../platform/schemas.ts';
import { RESULTS, resultsQuery } from '../../platform/listings.ts';
import { jsonbText } from '../../warehouse/jsonb-text.ts';
import { idSet, unknownFields } from '../../warehouse/load-staged.ts';
import type { WindowedResource } from './resource.ts';

/** The Result fields this version stores in columns (the schema's); anything else goes to `extra`. */
const KNOWN_RESULT_FIELDS: ReadonlySet<string> = new Set(Object.keys(resultSchema.shape));

/**
 * Course results: incremental date windows from the watermark (with a lookback), the
 * whole list on the first run and with `--full`, or the days of `--since/--until`
 * (the engine is src/sync/results/). The hot path: COPY into staging, then one upsert.
 */
export const results: WindowedResource<Result> = {
  name: 'results',
  kind: 'windowed',
  cron: '0 2 * * *',
  endpoint: RESULTS,
  request: (bounds) => ({ query: resultsQuery(bounds ?? {}) }),
  day: (result) => result.dateCompleted,
  key: (result) => result.id,
  rawKey: (raw) => (typeof raw === 'object' && raw !== null && 'id' in raw && typeof raw.id === 'string' ? normaliseGuid(raw.id) : undefined),
  rawDay: (raw) => {
    // As the schema reads it: a missing date is no date.
    if (typeof raw !== 'object' || raw === null) return undefined;
    if (!('dateCompleted' in raw) || raw.dateCompleted === null || raw.dateCompleted === undefined) return null;
    return typeof raw.dateCompleted === 'string' ? raw.dateCompleted : undefined;
  },
  table: {
    table: 'training.results',
    key: 'result_id',
    columns: [
      ['user_id', 'uuid not null'],
      ['course_id', 'uuid not null'],
      ['multi_course_result_id', 'uuid'],
      ['is_complete', 'boolean not null'],
      ['date_completed', 'timestamptz'],
      ['score', 'integer'],
      ['maximum_score', 'integer'],
      ['pass_rate', 'integer'],
      ['course_type', 'text'],
      ['extra', 'jsonb'],
    ],
    // Each result's filter answers, replaced with each listing of it.
    idSet: { table: 'training.result_filter_answers', column: 'answer_id' },
    sightings: 'trainsync.result_sightings',
    row: (r) => {
      const extra = unknownFields(r, KNOWN_RESULT_FIELDS);
      return [
        r.id,
        r.userId,
        r.courseId,
        r.multiCourseResultId,
        r.isComplete,
        r.dateCompleted,
        r.score,
        r.maximumScore,
        r.passRate,
        r.courseType,
        extra === null ? null : jsonbText(extra),
        idSet(r.resultFilters),
      ];
    },
  },
};
