import { z } from 'zod';
import type { JobContext } from '../../runtime/context.ts';
import { resultsTableEmpty } from '../../warehouse/load-results.ts';
import { getCheckpoint, saveCheckpoint, type RunCounts } from '../sync-state.ts';
import { unionGap, type WalkGap } from './gaps.ts';
import { MAX_READS, walkResults } from './walk.ts';

const gapSchema = z.object({ reason: z.string(), from: z.number().int().min(1), to: z.number().int().min(1).nullable() });

const fullWalkCheckpointSchema = z.object({
  nextPage: z.union([z.number(), z.literal('done')]).optional(),
  total: z.number().nullable().optional(),
  /** A possible gap still to close: pages to read again. */
  gap: gapSchema.nullable().optional(),
  /** Reads so far: the walk, then each re-read of a gap's pages. */
  reads: z.number().int().min(1).optional(),
  firstLoad: z.boolean().optional(),
});

type SavedGap = z.infer<typeof gapSchema>;

const toSaved = (gap: WalkGap | undefined): SavedGap | null => (gap ? { reason: gap.reason, from: gap.from, to: gap.to ?? null } : null);
const fromSaved = (gap: SavedGap | null | undefined): WalkGap | undefined => (gap ? { reason: gap.reason, from: gap.from, to: gap.to ?? undefined } : undefined);

export interface FullWalk {
  /** 1 when it resumed a walk a crash had interrupted. */
  resumed: number;
  /** Set when a possible gap remained after every read allowed: a result may have been skipped. */
  unfinished?: string;
  /**
   * The walk began on an empty `training.results`: nothing existed before it, so nothing
   * can have vanished, and it recorded no sightings; the removal pass is skipped.
   */
  firstLoad: boolean;
}

/**
 * Walks every page without dates (undated results included), checkpointing the next
 * page with each batch, and records sightings so vanished results can be marked removed.
 * Results arriving while it pages need nothing more. A possible gap (a result removed
 * behind the walk, see gaps.ts) is closed by reading only the pages it names
 * again, up to MAX_READS reads in all; the gap is checkpointed, so a restart goes on.
 * A first load (see `FullWalk.firstLoad`) writes by plain inserts and records no
 * sightings; whether it is one is decided before its first batch and kept in its
 * checkpoint, so a resumed walk (whose table is no longer empty) goes on as it began.
 */
export async function walkAllResults(ctx: JobContext, scope: string, runId: number, counts: RunCounts): Promise<FullWalk> {
  const key = `${scope}:full`;
  const saved = (await getCheckpoint(ctx.db, ctx.org.slug, key, fullWalkCheckpointSchema.catch({}))) ?? {};
  const firstLoad = saved.firstLoad ?? (saved.nextPage === undefined && (await resultsTableEmpty(ctx.db, ctx.org.slug)));
  let reads = saved.reads ?? 1;
  let total = saved.total ?? undefined;
  let gap: WalkGap | undefined;
  const resumed = saved.nextPage === 'done' || (saved.nextPage ?? 1) > 1 ? 1 : 0;
  if (saved.nextPage === 'done') {
    // Walked to the end before a crash; only closing its gap (if any) was left.
    gap = fromSaved(saved.gap);
  } else {
    const walk = await walkResults(ctx, {
      runId,
      query: {},
      startPage: saved.nextPage ?? 1,
      expectedTotal: total,
      knownGap: fromSaved(saved.gap),
      counts,
      // Sightings serve only the removal pass, which a first load skips.
      trackSightings: !firstLoad,
      firstLoad,
      // One sequence of pages: without requests ahead, each page would wait a whole round trip.
      prefetch: ctx.config.TRAINSYNC_RESULTS_CONCURRENCY,
      onBatch: (tx, position) =>
        saveCheckpoint(tx.db, ctx.org.slug, key, { nextPage: position.done ? 'done' : position.nextPage, total: position.total ?? null, gap: toSaved(position.gap), reads, firstLoad }, runId),
    });
    gap = walk.gap;
    total = walk.total;
  }
  while (gap) {
    if (reads >= MAX_READS) {
      ctx.log.warn({ reads, gap: gap.reason }, 'a gap remained after every read allowed; the run ends incomplete and the next run walks the results again');
      return { resumed, firstLoad, unfinished: `a gap remained after ${reads} reads: ${gap.reason}` };
    }
    const range = gap;
    reads += 1;
    ctx.log.info({ read: reads, from: range.from, to: range.to ?? 'end', gap: range.reason }, 'a result may have shifted past pages already read; reading those pages again');
    const reread = await walkResults(ctx, {
      runId,
      query: {},
      startPage: range.from,
      endPage: range.to,
      expectedTotal: total,
      counts,
      // Pages read again hold rows stored already: the upsert, not plain inserts.
      trackSightings: !firstLoad,
      prefetch: ctx.config.TRAINSYNC_RESULTS_CONCURRENCY,
      onBatch: (tx, position) => {
        // Until this read ends, a restart reads the same pages again.
        const next = position.done ? (position.gap ? unionGap(range, position.gap) : undefined) : range;
        return saveCheckpoint(tx.db, ctx.org.slug, key, { nextPage: 'done', total: position.total ?? total ?? null, gap: toSaved(next), reads, firstLoad }, runId);
      },
    });
    gap = reread.gap ? unionGap(range, reread.gap) : undefined;
    total = reread.total ?? total;
  }
  return { resumed, firstLoad };
}
