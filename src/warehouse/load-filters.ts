import type pg from 'pg';
import type { ReportingFilter } from '../platform/schemas.ts';
import { dedupeById, type LoadCounts } from './load-counts.ts';
import { markMissingListed, touchListed, upsertListed, type ListedTable } from './upsert-listed.ts';

const FILTERS: ListedTable = {
  table: 'training.reporting_filters',
  idColumn: 'filter_id',
  columns: [['name', 'text']],
};

const ANSWERS: ListedTable = {
  table: 'training.reporting_filter_answers',
  idColumn: 'answer_id',
  columns: [
    ['filter_id', 'uuid'],
    ['answer', 'text'],
  ],
};

/**
 * Writes the reporting filters and their answers. Counts are per filter: a filter
 * whose only change is a new or changed answer counts as updated. Answers no longer
 * listed are marked by markMissingFilters, like filters.
 */
export async function upsertFilters(
  client: pg.PoolClient,
  org: string,
  filters: readonly ReportingFilter[],
  seenAt: Date,
): Promise<LoadCounts> {
  const batch = dedupeById(filters, (f) => f.id);
  if (batch.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const written = await upsertListed(
    client,
    org,
    FILTERS,
    batch.map((f) => ({ filter_id: f.id, name: f.name })),
    seenAt,
  );
  const answers = dedupeById(
    batch.flatMap((f) => f.answers.map((a) => ({ answer_id: a.id, filter_id: f.id, answer: a.answer }))),
    (a) => a.answer_id,
  );
  const answersWritten = await upsertListed(client, org, ANSWERS, answers, seenAt);
  const filterOfAnswer = new Map(answers.map((a) => [a.answer_id, a.filter_id]));
  const answersOnly = new Set<string>();
  for (const answerId of [...answersWritten.inserted, ...answersWritten.updated]) {
    const filterId = filterOfAnswer.get(answerId)!;
    if (!written.inserted.has(filterId) && !written.updated.has(filterId)) answersOnly.add(filterId);
  }
  await touchListed(client, org, FILTERS, batch.map((f) => f.id), [...answersOnly], seenAt);
  await touchListed(client, org, ANSWERS, answers.map((a) => a.answer_id), [], seenAt);
  const inserted = written.inserted.size;
  const updated = written.updated.size + answersOnly.size;
  return { inserted, updated, unchanged: batch.length - inserted - updated };
}

/**
 * After a complete listing stamped with `seenAt`: marks filters and answers it did not
 * include as removed. Returns how many rows were marked (filters plus answers).
 */
export async function markMissingFilters(client: pg.PoolClient, org: string, seenAt: Date): Promise<number> {
  return (await markMissingListed(client, org, FILTERS, seenAt)) + (await markMissingListed(client, org, ANSWERS, seenAt));
}
