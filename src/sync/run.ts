import type { JobContext } from '../queue/job-context.ts';
import { errorMessage } from '../lib/errors.ts';
import { toInfrastructureError } from '../lib/infra-errors.ts';
import { countRequests, type RequestTally } from '../platform/request-tally.ts';
import { addRunCounts, addRunCountsAndTotals, closeAbandonedRuns, finishRun, startRun, startRunClosingAbandoned } from './runs-store.ts';
import { getCheckpoint, saveCheckpoint } from './sync-state.ts';
import { z } from 'zod';
import type { SyncSummary } from './summary.ts';
import { ATTR } from '../lib/tracing/attributes.ts';
import { inSpan } from '../lib/tracing/spans.ts';

export interface RunSpec {
  resource: string;
  mode: string;
  params?: unknown;
  /**
   * A checkpoint key that keeps the run's id, so every attempt of one job (a retry, a
   * restart after a crash) adds to the same run instead of starting another.
   */
  resumeKey?: string;
}

export interface ActiveRun {
  id: number;
  /** True when an earlier attempt of this job started the run. */
  resumed: boolean;
}

/** What a run adds to its summary beyond the recorded totals. */
export type RunExtras = Pick<SyncSummary, 'windows' | 'windowsResumed'>;

const runCheckpointSchema = z.object({ runId: z.number() });

/**
 * The run, and how many other runs of the resource still marked running it closed: sync jobs
 * of one resource of an organisation never run at once (an exclusive lock scoped by
 * organisation), so any other run of it still marked running was cut off (its worker died, or
 * its database went away before it could be marked) and will never finish. A new run without
 * a resume key is started and closes them in one statement.
 */
async function startOrResume(ctx: JobContext, spec: RunSpec): Promise<ActiveRun & { abandoned: number }> {
  const start = { resource: spec.resource, mode: spec.mode, params: spec.params ?? {}, jobId: ctx.job.id };
  const { resumeKey } = spec;
  if (!resumeKey) {
    const { id, abandoned } = await startRunClosingAbandoned(ctx.scope, start);
    return { id, resumed: false, abandoned };
  }
  const saved = await getCheckpoint(ctx.scope, resumeKey, runCheckpointSchema.optional().catch(undefined));
  let run: ActiveRun;
  if (saved) {
    ctx.log.info({ runId: saved.runId }, 'resuming the run this job started before');
    run = { id: saved.runId, resumed: true };
  } else {
    run = await ctx.scope.transaction(async (tx) => {
      const id = await startRun(tx, start);
      await saveCheckpoint(tx, resumeKey, { runId: id }, id);
      return { id, resumed: false };
    });
  }
  return { ...run, abandoned: await closeAbandonedRuns(ctx.scope, spec.resource, run.id) };
}

/**
 * The lifecycle of every sync run: records it as running (or resumes the one an
 * earlier attempt started), does the work, and returns the summary from the recorded
 * totals. The work closes the run itself with `finishRun`, inside the transaction of
 * its last rows, so a run is never marked finished without them. A run that throws is
 * marked failed, except a resumable one stopped for shutdown or by a Postgres outage:
 * the next attempt goes on.
 */
export async function withRun(ctx: JobContext, spec: RunSpec, work: (run: ActiveRun) => Promise<RunExtras | void>): Promise<SyncSummary> {
  const started = Date.now();
  const { abandoned, ...run } = await startOrResume(ctx, spec);
  if (abandoned > 0) ctx.log.info({ resource: spec.resource, abandoned }, 'marked runs that were cut off as failed');
  let extras: RunExtras | void;
  // The platform requests of this attempt, added to the run's total however it ends.
  const tally: RequestTally = { requests: 0 };
  try {
    // Traces on: the walk (its pages, COPYs and commits) is one span inside the job's.
    const walk = { [ATTR.org]: ctx.org.slug, [ATTR.resource]: spec.resource, [ATTR.runId]: run.id };
    extras = await countRequests(tally, () => inSpan(`walk ${spec.resource}`, walk, () => work(run)));
  } catch (error) {
    await addRunCounts(ctx.scope.db, run.id, { requests: tally.requests }).catch(() => undefined);
    // A resumable run stopped for shutdown or by a Postgres outage stays running: the job
    // goes back to the queue and its next attempt adds to this run from its checkpoint.
    const resumes = spec.resumeKey !== undefined && (ctx.signal.aborted || toInfrastructureError(error, ctx.config)?.service === 'postgres');
    if (!resumes) {
      await finishRun(ctx.scope.db, run.id, { status: 'failed', error: errorMessage(error) }).catch(() => undefined);
    }
    throw error;
  }
  // The attempt's requests, and the totals the summary gives, in one statement.
  const { status, note, ...totals } = await addRunCountsAndTotals(ctx.scope.db, run.id, { requests: tally.requests });
  if (status !== 'succeeded' && status !== 'incomplete') throw new Error(`run ${run.id} of ${spec.resource} ended without being finished (status ${status})`);
  return { resource: spec.resource, runId: run.id, status, mode: spec.mode, ...totals, durationMs: Date.now() - started, ...(note ? { note } : {}), ...extras };
}
