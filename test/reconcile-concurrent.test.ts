import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileFixJob } from '../jobs/reconcile-fix.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { provisionExitCode } from '../src/commands/render/provision-report.ts';
import { errorMessage } from '../src/lib/errors.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';
import { failureReason, type JobOutcome } from '../src/queue/wait-for-jobs.ts';
import type { WorkerHandle } from '../src/queue/worker.ts';
import { jobIdForAction } from '../src/provisioning/apply/actions.ts';
import { auditRows } from '../src/provisioning/apply/actions-store.ts';
import { enqueuePlan } from '../src/provisioning/apply/enqueue.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { RECONCILE_FIX_JOB, reconcileFix, type ReconcileFixSummary } from '../src/provisioning/reconcile-fix.ts';
import { RECONCILE_LOCK, underReconcileLock } from '../src/provisioning/reconcile-lock.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { findUser } from '../src/simulator/index.ts';
import { runCli, startCli, stderrSaid, type CliRun } from './helpers/cli.ts';
import { feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * `reconcile --fix` from the CLI and the worker's schedule at the same moment, through the
 * real CLI, worker, Postgres, Redis and simulator. Whatever the timing, nobody's access
 * changes twice: one of them repairs and the other yields saying who is running (or, when
 * they do not overlap, the second finds nothing left to repair); and no failure ever
 * reads as a bare "failed".
 */

let h: SyncHarness;
let files: ReturnType<typeof feedDir>;
let leavers: HrRow[];
let worker: WorkerHandle;

const cli = (args: string[]): Promise<CliRun> => runCli(args, { ...h.env, LOG_LEVEL: 'warn' });
const account = (r: HrRow): { id: string; hasAccess: boolean } => findUser(h.sim.state, r.email)!;
const scope = () => h.app.scopes.scope(DEFAULT_ORG);

/** Gives a leaver access again by hand (drift the next repair disables). */
async function enableByHand(r: HrRow): Promise<void> {
  const response = await fetch(`${h.sim.url}/api/v2/users/${account(r).id}/enable`, { method: 'PATCH', headers: { authorization: `Bearer ${h.sim.apiKey}` } });
  expect(response.status).toBe(204);
}

/** The writes to one account since `from` (an index into the simulator's request log). */
const writesTo = (r: HrRow, from: number): string[] =>
  h.sim.requests
    .slice(from)
    .filter((q) => q.method !== 'GET' && q.path.includes(account(r).id))
    .map((q) => `${q.method} ${q.path}`);

async function scheduled(): Promise<JobOutcome> {
  const job = await h.app.queue.add(RECONCILE_FIX_JOB, reconcileFixJob.payload.parse({ trigger: 'schedule' }), { org: DEFAULT_ORG, waited: true });
  const [outcome] = await h.app.queue.waitFor(PROVISION_QUEUE, [job.id]);
  return outcome!;
}

const openActions = async (): Promise<number> =>
  Number((await h.database.pool.query<{ n: number }>("select count(*)::int as n from trainsync.provisioning_actions where org = 'default' and status in ('queued', 'planned')")).rows[0]?.n);

beforeAll(async () => {
  h = await createSyncHarness({ simulator: { seed: 31, sizes: { users: 30, groups: 2, courses: 2, results: 5 } } });
  files = feedDir();
  const rows = rowsFromState(h.sim.state);
  leavers = rows.filter((r) => r.status === 'active').slice(0, 3);
  for (const r of leavers) r.status = 'terminated';
  const result = await provisionFeed(provisionDeps(h.app, DEFAULT_ORG), { file: files.write('hr.csv', toCsv(rows)), mode: 'full', dryRun: false, force: false });
  expect(provisionExitCode(result), JSON.stringify(result.plan.refused)).toBe(0);
  expect(leavers.every((r) => !account(r).hasAccess)).toBe(true);
  worker = await h.app.queue.startWorkers([PROVISION_QUEUE]);
}, 180_000);

afterAll(async () => {
  await worker?.close();
  await h?.close();
  files?.cleanup();
});

describe('two reconciles of one organisation at the same moment', () => {
  it('the CLI and the scheduled job, several rounds: each leaver enabled by hand is disabled once, and one that yields names the other', async () => {
    const seen = { cliYielded: 0, jobYielded: 0, inTurn: 0 };
    // The schedule fires as the CLI starts, and later into its run (the CLI takes about a
    // second to start): which one yields, if either, is up to the machine; the outcome is not.
    const offsets = [0, 500, 1_000, 1_500, 2_000, 3_000];
    // A platform a little slow, so each one holds the repair a while.
    h.sim.setFaults({ latencyMs: 200 });
    try {
      for (const offset of offsets) {
        for (const r of leavers) await enableByHand(r);
        const from = h.sim.requests.length;

        const [run, outcome] = await Promise.all([cli(['reconcile', '--fix']), new Promise((resolve) => setTimeout(resolve, offset)).then(scheduled)]);
        // Every action either of them enqueued has run.
        await waitFor(async () => ((await openActions()) === 0 ? true : undefined), 60_000, 'the repairs to finish');

        // The job never fails for this; the CLI is 0 (it ran) or 2 (it yielded, nothing changed).
        expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'completed' });
        const summary = outcome.result as ReconcileFixSummary;
        const said = stderrSaid(run.stderr);
        if (run.code === 2) {
          seen.cliYielded += 1;
          // Named, unless the holder had not written its note within the yielder's wait (a busy machine):
          // the tests below hold the lock with its note written and check the naming itself.
          expect(said).toMatch(/another reconcile --fix of organisation default is running \((the scheduled reconcile-fix job \d+ on [^,]+:\d+, started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC|it has only just started and not yet said who it is)\); this one skipped: nothing was planned, enqueued or changed/);
          expect(summary.skipped).toBeUndefined();
        } else {
          expect(run.code, run.stdout + run.stderr).toBe(0);
          if (summary.skipped !== undefined) {
            seen.jobYielded += 1;
            expect(summary.skipped).toMatch(/another reconcile --fix of organisation default is running \((`trainsync reconcile --fix` on [^,]+:\d+, started .* UTC|it has only just started and not yet said who it is)\); this one skipped/);
            expect(summary.enqueued).toBe(0);
          } else {
            // One after the other: the second found the repairs done, or waited for the first's.
            seen.inTurn += 1;
          }
        }
        // The platform is right, and each leaver's access changed exactly once this round.
        for (const r of leavers) {
          expect(account(r).hasAccess, r.email).toBe(false);
          expect(writesTo(r, from), r.email).toEqual([expect.stringMatching(/^(POST|PATCH) \/api\/v2\/users\/[0-9a-f-]+\/disable$/)]);
        }
      }
    } finally {
      h.sim.setFaults({ latencyMs: 0 });
    }
    expect(seen.cliYielded + seen.jobYielded + seen.inTurn).toBe(offsets.length);
  }, 300_000);

  it('the schedule yields to a CLI repair still running, naming it; the CLI repairs once', async () => {
    const leaver = leavers[0]!;
    await enableByHand(leaver);
    const from = h.sim.requests.length;
    // Slow platform: the CLI holds the repair through its platform read and its action.
    h.sim.setFaults({ latencyMs: 1_500 });
    try {
      const running = startCli(['reconcile', '--fix'], { ...h.env, LOG_LEVEL: 'warn' });
      const note = await waitFor(async () => h.app.queue.lockNotes.get(scope(), RECONCILE_LOCK), 60_000, 'the CLI to hold the reconcile lock');
      expect(note).toMatch(/^`trainsync reconcile --fix` on /);
      const outcome = await scheduled();
      expect(outcome).toMatchObject({ status: 'completed', result: { enqueued: 0, skipped: expect.stringContaining(`(${note}); this one skipped`) } });
      const run = await running.done;
      expect(run.code, run.stdout + run.stderr).toBe(0);
    } finally {
      h.sim.setFaults({ latencyMs: 0 });
    }
    expect(account(leaver).hasAccess).toBe(false);
    expect(writesTo(leaver, from)).toHaveLength(1);
    // The holder's note is gone with its lock.
    expect(await h.app.queue.lockNotes.get(scope(), RECONCILE_LOCK)).toBeUndefined();
  }, 120_000);

  it('the CLI yields to a repair running, with exit 2 and who holds it, and changes nothing', async () => {
    const leaver = leavers[1]!;
    await enableByHand(leaver);
    const from = h.sim.requests.length;
    // The repair of the schedule, held open while the CLI tries (the same lock and note the job takes).
    const held = await underReconcileLock(provisionDeps(h.app, DEFAULT_ORG), { by: 'schedule', jobId: '77' }, async () => {
      const run = await cli(['reconcile', '--fix']);
      expect(run.code, run.stdout + run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(stderrSaid(run.stderr)).toMatch(/another reconcile --fix of organisation default is running \(the scheduled reconcile-fix job 77 on [^,]+:\d+, started .* UTC\); this one skipped/);
      const json = await cli(['reconcile', '--fix', '--json']);
      expect(json.code).toBe(2);
      expect((JSON.parse(json.stdout) as { busy: { holder: string } }).busy.holder).toMatch(/^the scheduled reconcile-fix job 77 on /);
      return true;
    });
    expect(held).toEqual({ ran: true, value: true });
    expect(writesTo(leaver, from)).toEqual([]);
    expect(account(leaver).hasAccess).toBe(true);
    // Free again: the next one repairs.
    expect((await cli(['reconcile', '--fix'])).code).toBe(0);
    expect(account(leaver).hasAccess).toBe(false);
  }, 120_000);
});

describe('a plan read before another run applied the same change', () => {
  it('is not enqueued again: the action is already done, the person left for the next plan, nothing written twice', async () => {
    const leaver = leavers[2]!;
    await enableByHand(leaver);
    const deps = provisionDeps(h.app, DEFAULT_ORG);
    // The plan as a repair read it, a moment before another run applied the same change.
    const stale = (await reconcileFix(deps, { dryRun: true, force: false, wait: false })).plan;
    const ids = stale.actions.map((a) => a.id);
    expect(ids).toEqual([expect.stringMatching(new RegExp(`^disable:${leaver.employee_id}:v\\d+$`))]);
    const applied = await reconcileFix(deps, { dryRun: false, force: false, wait: true });
    expect(applied.applied?.audit.map((r) => [r.actionId, r.status])).toEqual([[ids[0], 'succeeded']]);
    expect(account(leaver).hasAccess).toBe(false);

    const from = h.sim.requests.length;
    const again = await enqueuePlan(deps, stale, null, { source: 'reconcile' });
    expect(again).toMatchObject({ enqueued: [], alreadyDone: ids, skippedEmployees: [leaver.employee_id] });
    expect(await h.app.queue.state(PROVISION_QUEUE, jobIdForAction(deps.scope, ids[0]!))).toBe('completed');
    expect((await auditRows(deps.scope, ids)).map((r) => r.status)).toEqual(['succeeded']);
    expect(writesTo(leaver, from)).toEqual([]);
  }, 120_000);
});

describe('a failure always says why', () => {
  /** Anything a job might throw, messages empty or not, nested in causes and AggregateErrors. */
  const thrown: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.constantFrom('', ' ', 'boom', 0, null, undefined, {}, { message: '' }),
      fc.string().map((m) => new Error(m)),
      fc.record({ m: fc.constantFrom('', '  ', 'inner'), cause: tie('value') }).map(({ m, cause }) => new Error(m, { cause })),
      fc.record({ m: fc.constantFrom('', 'all failed'), errors: fc.array(tie('value'), { maxLength: 3 }) }).map(({ m, errors }) => new AggregateError(errors, m)),
      fc.constantFrom('ECONNREFUSED', 'ERR').map((code) => Object.assign(new Error(''), { code })),
    ),
  })).value;

  it('errorMessage is never empty, whatever was thrown', () => {
    fc.assert(fc.property(thrown, (error) => errorMessage(error).trim().length > 0));
  });

  it('a job without a recorded reason is described, never a bare "failed"', () => {
    fc.assert(
      fc.property(fc.constantFrom(undefined, '', '  '), fc.option(fc.array(fc.constantFrom('', 'Error: lost\n    at x'))), fc.nat(5), (reason, stacktrace, attemptsMade) => {
        const said = failureReason(reason, { id: '9', name: RECONCILE_FIX_JOB, attemptsMade, stacktrace });
        return said.trim().length > 0 && said !== 'failed';
      }),
    );
    expect(failureReason('', { id: '9', name: RECONCILE_FIX_JOB, attemptsMade: 1 })).toBe(
      "job 9 (reconcile-fix) failed after 1 attempt without a recorded reason; its worker's log (job finished, jobId 9) has the error",
    );
  });
});
