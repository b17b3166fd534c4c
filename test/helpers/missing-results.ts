import type pg from 'pg';
import { z } from 'zod';

/**
 * "Which results were on the platform before a run and are still there after it, and
 * are not in the warehouse": the ids listed at the run's start (read quietly, before the
 * faults are set), less the ids the simulator's faults removed during the run
 * (`GET /__simulator/results/changes`), less the warehouse's current results. For the
 * tests and the drift bench, whose simulator may be in another process.
 */

export const resultChangesSchema = z.object({ added: z.array(z.string()), removed: z.array(z.string()) });
export type ResultChangesBody = z.infer<typeof resultChangesSchema>;

const envelopeSchema = z.object({ entities: z.array(z.object({ id: z.string() })), links: z.array(z.object({ type: z.string() })) });

/** The results the simulator's arrival and removal faults added and deleted since the faults were last set. */
export async function fetchResultChanges(simUrl: string, org?: string): Promise<ResultChangesBody> {
  const query = org === undefined ? '' : `?org=${encodeURIComponent(org)}`;
  const response = await fetch(`${simUrl}/__simulator/results/changes${query}`);
  if (!response.ok) throw new Error(`GET /__simulator/results/changes answered ${response.status}`);
  return resultChangesSchema.parse(await response.json());
}

/**
 * Every result id a GET results query lists now, page by page. Read it with the data
 * faults off: with them on, this read would move them on and change the platform.
 */
export async function listedResultIds(simUrl: string, apiKey: string, query: Record<string, string> = {}): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let page = 1; ; page++) {
    const params = new URLSearchParams({ ...query, page: String(page) });
    const response = await fetch(`${simUrl}/api/v2/results?${params.toString()}`, { headers: { authorization: `Bearer ${apiKey}` } });
    if (!response.ok) throw new Error(`GET results page ${page} answered ${response.status}`);
    const envelope = envelopeSchema.parse(await response.json());
    for (const entity of envelope.entities) ids.add(entity.id.toLowerCase());
    if (!envelope.links.some((l) => l.type === 'Next Page')) return ids;
  }
}

/** The ids of the organisation's results the warehouse holds as current (not marked removed). */
export async function warehouseResultIds(pool: pg.Pool, org = 'default'): Promise<Set<string>> {
  const { rows } = await pool.query<{ id: string }>('select result_id::text as id from training.results where org = $1 and removed_at is null', [org]);
  return new Set(rows.map((r) => r.id.toLowerCase()));
}

/** The results listed before that no fault removed and the warehouse lacks, sorted. */
export function missingResults(before: Iterable<string>, removed: Iterable<string>, stored: ReadonlySet<string>): string[] {
  const gone = new Set([...removed].map((id) => id.toLowerCase()));
  const missing: string[] = [];
  for (const raw of before) {
    const id = raw.toLowerCase();
    if (!gone.has(id) && !stored.has(id)) missing.push(id);
  }
  return missing.sort();
}
