import type { JobContext } from '../queue/job-context.ts';
import { errorMessage } from '../lib/errors.ts';
import { toInfrastructureError } from '../lib/infra-errors.ts';
import type { RequestTally } from '../platform/request-tally.ts';
import { addRunCounts, addRunCountsAndTotals, closeAbandonedRuns, finishRun, finishRunWithTotals, startRun, startRunClosingAbandoned, type FinishRunInput, type RunCounts } from './runs-store.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import type { OrgTx } from '../warehouse/scope.ts';
import type { RunStatus } from './tables.ts';
import { getCheckpoint, saveCheckpoint } from './sync-state.ts';
import { z } from 'zod';
import type { SyncSummary } from './summary.ts';
import { ATTR } from '../lib/tracing/attributes.ts';
import { inSpan } from '../lib/tracing/spans.ts';

export interface RunSpec {
  resource: string;
  /**
   * The run's mode, or how to read it from the database (a plan's own reads) inside the
   * transaction that starts or resumes the run: one transaction, not two.
   */
  mode: string | ((tx: OrgTx) => Promise<string>);
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

type RunTotals = RunCounts & { status: RunStatus; note: string | null };

/**
 * The attempt of each run `withRun` is running: its request tally, and what `closeRun`
 * recorded (the requests it added, the totals it read back).
 */
const attempts = new WeakMap<ActiveRun, { tally: RequestTally; closed?: { requests: number; totals: RunTotals } }>();

/**
 * Closes the run in the work's last transaction (as `finishRun`), adding the attempt's
 * requests so far and reading the totals back: `withRun` then needs no statement of its
 * own after the work, unless a request was made after it. Call it only as the work's
 * last step: a work that throws after it had its closing rolled back (every engine's
 * closing transaction is its last act), so the error path adds every request again.
 */
export async function closeRun(db: Kysely<Database>, run: ActiveRun, input: FinishRunInput): Promise<void> {
  const attempt = attempts.get(run);
  if (!attempt) {
    await finishRun(db, run.id, input);
    return;
  }
  const requests = attempt.tally.requests;
  const totals = await finishRunWithTotals(db, run.id, { ...input, requests: (input.requests ?? 0) + requests });
  attempt.closed = { requests, totals };
}

const runCheckpointSchema = z.object({ runId: z.number() });

/**
 * The run, and how many other runs of the resource still marked running it closed: sync jobs
 * of one resource of an organisation never run at once (an exclusive lock scoped by
 * organisation), so any other run of it still marked running was cut off (its worker died, or
 * its database went away before it could be marked) and will never finish. A new run without
 * a resume key is started and closes them in one statement.
 */
async function startOrResume(ctx: JobContext, spec: RunSpec): Promise<ActiveRun & { abandoned: number; mode: string }> {
  const { resumeKey } = spec;
  const startOf = (mode: string): Parameters<typeof startRun>[1] => ({ resource: spec.resource, mode, params: spec.params ?? {}, jobId: ctx.job.id });
  if (!resumeKey && typeof spec.mode === 'string') {
    const { id, abandoned } = await startRunClosingAbandoned(ctx.scope, startOf(spec.mode));
    return { id, resumed: false, abandoned, mode: spec.mode };
  }
  // The plan's reads (a mode read from the database), the checkpoint read, the run started
  // (or resumed) and the abandoned runs closed in one scoped transaction: one round trip
  // each, not several transactions.
  const run = await ctx.scope.transaction(async (tx) => {
    const mode = typeof spec.mode === 'string' ? spec.mode : await spec.mode(tx);
    const saved = resumeKey === undefined ? undefined : await getCheckpoint(tx, resumeKey, runCheckpointSchema.optional().catch(undefined));
    let id: number;
    if (saved) {
      id = saved.runId;
    } else {
      id = await startRun(tx, startOf(mode));
      if (resumeKey !== undefined) await saveCheckpoint(tx, resumeKey, { runId: id }, id);
    }
    return { id, resumed: saved !== undefined, abandoned: await closeAbandonedRuns(tx, spec.resource, id), mode };
  });
  if (run.resumed) ctx.log.info({ runId: run.id }, 'resuming the run this job started before');
  return run;
}

/**
 * The lifecycle of every sync run: records it as running (or resumes the one an
 * earlier attempt started), does the work, and returns the summary from the recorded
 * totals. The work is given the run's context: the job's, whose `platform` adds every
 * request it sends to the run's count (request-tally.ts); it makes its requests through
 * that one. The work closes the run itself with `finishRun`, inside the transaction of
 * its last rows, so a run is never marked finished without them. A run that throws is
 * marked failed, except a resumable one stopped for shutdown or by a Postgres outage:
 * the next attempt goes on.
 */
export async function withRun(ctx: JobContext, spec: RunSpec, work: (run: ActiveRun, ctx: JobContext) => Promise<RunExtras | void>): Promise<SyncSummary> {
  const started = Date.now();
  const { abandoned, mode, ...run } = await startOrResume(ctx, spec);
  if (abandoned > 0) ctx.log.info({ resource: spec.resource, abandoned }, 'marked runs that were cut off as failed');
  let extras: RunExtras | void;
  // The platform requests of this attempt, added to the run's total however it ends.
  const tally: RequestTally = { requests: 0 };
  const attempt: { tally: RequestTally; closed?: { requests: number; totals: RunTotals } } = { tally };
  attempts.set(run, attempt);
  try {
    // Traces on: the walk (its pages, COPYs and commits) is one span inside the job's.
    const walk = { [ATTR.org]: ctx.org.slug, [ATTR.resource]: spec.resource, [ATTR.runId]: run.id };
    const runCtx: JobContext = { ...ctx, platform: ctx.platform.counting(tally) };
    extras = await inSpan(`walk ${spec.resource}`, walk, () => work(run, runCtx));
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
  // The attempt's requests, and the totals the summary gives, in one statement: the closing
  // one (`closeRun`) when no request came after it (a retried closing transaction recorded
  // its last, committed try).
  const { closed } = attempt;
  const { status, note, ...totals } =
    closed !== undefined && closed.requests === tally.requests
      ? closed.totals
      : await addRunCountsAndTotals(ctx.scope.db, run.id, { requests: tally.requests - (closed?.requests ?? 0) });
  if (status !== 'succeeded' && status !== 'incomplete') throw new Error(`run ${run.id} of ${spec.resource} ended without being finished (status ${status})`);
  return { resource: spec.resource, runId: run.id, status, mode, ...totals, durationMs: Date.now() - started, ...(note ? { note } : {}), ...extras };
}
