import { z } from 'zod';
import type { JobContext } from '../context.ts';
import { getCheckpoint, saveCheckpoint, type RunCounts } from '../warehouse/sync-state.ts';
import { MAX_READS, walkResults } from './results-walk.ts';

const fullWalkCheckpointSchema = z.object({
  nextPage: z.union([z.number(), z.literal('done')]).optional(),
  total: z.number().nullable().optional(),
});

/**
 * Walks every page without dates (undated results included), checkpointing the next
 * page with each batch, and records sightings so vanished results can be marked removed.
 * Returns 1 when it resumed a walk a crash had interrupted.
 */
export async function walkAllResults(ctx: JobContext, scope: string, runId: number, counts: RunCounts): Promise<number> {
  const key = `${scope}:full`;
  const saved = (await getCheckpoint(ctx.db, key, fullWalkCheckpointSchema.catch({}))) ?? {};
  if (saved.nextPage === 'done') return 1; // walked to the end before a crash; only the finish was left
  let startPage = saved.nextPage ?? 1;
  let expectedTotal = saved.total ?? undefined;
  const resumed = startPage > 1 ? 1 : 0;
  for (let read = 1; ; read += 1) {
    const { drifted } = await walkResults(ctx, {
      runId,
      query: {},
      startPage,
      expectedTotal,
      counts,
      trackSightings: true,
      onBatch: (tx, position) => saveCheckpoint(tx.db, key, { nextPage: position.done ? 'done' : position.nextPage, total: position.total ?? null }, runId),
    });
    // The list changed while paged (or since the walk was interrupted): rows may have
    // shifted between pages, so one more walk from page 1 sees every row that exists.
    if (!drifted) return resumed;
    if (read >= MAX_READS) {
      ctx.log.warn({ reads: read }, 'results kept changing while paged; kept what was read');
      return resumed;
    }
    ctx.log.info({ read, resumedAtPage: startPage }, 'results changed while paged; reading all of them once more');
    startPage = 1;
    expectedTotal = undefined;
  }
}
