import { z } from 'zod';
import type { JobContext } from '../../queue/job-context.ts';
import { stagedTableEmpty } from '../../warehouse/load-staged.ts';
import type { WindowedResource } from '../resources/resource.ts';
import { getCheckpoint, saveCheckpoint } from '../sync-state.ts';
import { type RunCounts } from '../runs-store.ts';
import { walkResults } from './walk.ts';

const readCheckpointSchema = z.object({
  cursor: z.number().int().min(0),
  total: z.number().int().min(0),
  pageSize: z.number().int().min(0),
  reads: z.number().int().min(0),
  uncertain: z.array(z.number().int().min(0)).optional(),
});

const fullWalkCheckpointSchema = z.object({
  /** The completeness rule's state as of the rows committed with it. */
  read: readCheckpointSchema.optional(),
  /** The walk ended before a restart: only finishing the run was left. */
  ended: z.object({ complete: z.boolean(), reason: z.string().optional() }).optional(),
  firstLoad: z.boolean().optional(),
});

export interface FullWalk {
  /** 1 when it resumed a walk a crash had interrupted. */
  resumed: number;
  /** Set when the rule could not prove every result read: a result may have been skipped. */
  unfinished?: string;
  /**
   * The walk began on an empty `training.results`: nothing existed before it, so nothing
   * can have vanished, and it recorded no sightings; the removal pass is skipped.
   */
  firstLoad: boolean;
}

/**
 * Walks every page without dates (undated results included), reading ahead while the
 * list is quiet, until the completeness rule (completeness.ts) has proven every result
 * listed throughout the walk read, or gives up; the rule's state is checkpointed with
 * each batch, so a restart goes on where the committed rows end. Records sightings so
 * vanished results can be marked removed. A first load (see `FullWalk.firstLoad`) writes
 * by plain inserts and records no sightings; whether it is one is decided before its
 * first batch and kept in its checkpoint, so a resumed walk (whose table is no longer
 * empty) goes on as it began.
 */
export async function walkAllResults<T>(ctx: JobContext, resource: WindowedResource<T>, scope: string, runId: number, counts: RunCounts): Promise<FullWalk> {
  const key = `${scope}:full`;
  // A checkpoint this version cannot read (an older layout) starts the walk again: never wrong.
  const saved = (await getCheckpoint(ctx.scope, key, fullWalkCheckpointSchema.catch({}))) ?? {};
  const firstLoad = saved.firstLoad ?? (saved.read === undefined && saved.ended === undefined && (await stagedTableEmpty(ctx.scope, resource.table)));
  const resumed = saved.read !== undefined || saved.ended !== undefined ? 1 : 0;
  if (saved.ended) return { resumed, firstLoad, ...(saved.ended.complete ? {} : { unfinished: saved.ended.reason ?? 'not every result was proven read' }) };
  const walk = await walkResults(ctx, resource, {
    runId,
    request: resource.request(undefined),
    resume: saved.read,
    counts,
    // Sightings serve only the removal pass, which a first load skips.
    trackSightings: !firstLoad,
    firstLoad,
    // One sequence of pages: without requests ahead, each page would wait a whole round
    // trip. Two more than the windows an incremental run reads at once cover the time a
    // page takes to use; a concurrency of 1 means one request at a time.
    readAhead: ctx.config.TRAINSYNC_RESULTS_CONCURRENCY > 1 ? ctx.config.TRAINSYNC_RESULTS_CONCURRENCY + 2 : 1,
    onBatch: (tx, position) => {
      const { verdict } = position;
      const ended = verdict.kind === 'reading' ? undefined : { complete: verdict.kind === 'complete', ...(verdict.kind === 'incomplete' ? { reason: verdict.reason } : {}) };
      return saveCheckpoint(tx, key, { read: position.read, ended, firstLoad }, runId);
    },
  });
  if (walk.verdict.kind === 'incomplete') {
    ctx.log.warn({ reason: walk.verdict.reason }, 'the walk could not prove every result read; the run ends incomplete and the next run walks the results again');
    return { resumed, firstLoad, unfinished: walk.verdict.reason };
  }
  return { resumed, firstLoad };
}
