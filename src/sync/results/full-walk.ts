import { z } from 'zod';
import type { JobContext } from '../../runtime/context.ts';
import { getCheckpoint, saveCheckpoint, type RunCounts } from '../sync-state.ts';
import { MAX_READS, walkResults } from './walk.ts';

const fullWalkCheckpointSchema = z.object({
  nextPage: z.union([z.number(), z.literal('done')]).optional(),
  total: z.number().nullable().optional(),
  drifted: z.boolean().optional(),
});

export interface FullWalk {
  /** 1 when it resumed a walk a crash had interrupted. */
  resumed: number;
  /** Set when the results kept changing for every walk allowed: some may have shifted past us. */
  unfinished?: string;
}

/**
 * Walks every page without dates (undated results included), checkpointing the next
 * page with each batch, and records sightings so vanished results can be marked removed.
 */
export async function walkAllResults(ctx: JobContext, scope: string, runId: number, counts: RunCounts): Promise<FullWalk> {
  const key = `${scope}:full`;
  const saved = (await getCheckpoint(ctx.db, key, fullWalkCheckpointSchema.catch({}))) ?? {};
  // Walked to the end before a crash; only the finish was left.
  if (saved.nextPage === 'done') return { resumed: 1, ...(saved.drifted ? { unfinished: `still changing after ${MAX_READS} walks` } : {}) };
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
      onBatch: (tx, position) =>
        saveCheckpoint(tx.db, key, { nextPage: position.done ? 'done' : position.nextPage, total: position.total ?? null, drifted: position.drifted }, runId),
    });
    // The list changed while paged (or since the walk was interrupted): rows may have
    // shifted between pages, so one more walk from page 1 sees every row that exists.
    if (!drifted) return { resumed };
    if (read >= MAX_READS) {
      ctx.log.warn({ reads: read }, 'results kept changing while paged; the run ends incomplete and the next run walks them again');
      return { resumed, unfinished: `still changing after ${MAX_READS} walks` };
    }
    ctx.log.info({ read, resumedAtPage: startPage }, 'results changed while paged; reading all of them once more');
    startPage = 1;
    expectedTotal = undefined;
  }
}
