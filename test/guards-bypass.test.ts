import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileFixJob } from '../jobs/reconcile-fix.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { reconcileFixExitCode } from '../src/commands/reconcile-fix.ts';
import { provisionExitCode } from '../src/commands/render/provision-report.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';
import { rejectHeldPlan } from '../src/provisioning/approve-held-plan.ts';
import { readFeed } from '../src/provisioning/feed/read.ts';
import type { HeldDecisionDeps } from '../src/provisioning/held-sources.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { RECONCILE_FIX_JOB, reconcileFix } from '../src/provisioning/reconcile-fix.ts';
import { underReconcileLock } from '../src/provisioning/reconcile-lock.ts';
import { snapshotFeed } from '../src/provisioning/snapshot-feed.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { findUser, writeCallCount } from '../src/simulator/index.ts';
import { runCli, type CliRun, stderrSaid } from './helpers/cli.ts';
import { consoleSession, visible } from './helpers/console-http.ts';
import { feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { expectNoApplyingCommand } from './helpers/no-applying-command.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * No way around the guards on access changes, through the real CLI, worker, console,
 * Postgres, Redis and the simulator: a feed cut short and loaded with `load-feed` is refused
 * by `reconcile --fix` (the CLI and the scheduled job) as `provision` refuses the feed; a
 * mass disable applies only with its count typed, checked against the plan as it is now;
 * and no message on the way prints a command that would apply it.
 */

const USER = { name: 'gina', password: 'guards-bypass-1234' };

let h: SyncHarness;
let files: ReturnType<typeof feedDir>;
let rows: HrRow[];
let full: string;
let server: ConsoleServer;
let base: string;

const cli = (args: string[]): Promise<CliRun> => runCli(args, { ...h.env, LOG_LEVEL: 'warn' });
/**
 * Set-up and clean-up the tests are not about (the whole workforce provisioned, the held
 * repair rejected, the snapshot put right) run in this process, through the same functions
 * as the commands; what is under test goes through the real CLI.
 */
const deps = (): HeldDecisionDeps => provisionDeps(h.app, DEFAULT_ORG);
const provisionWhole = async (): Promise<void> => {
  const result = await provisionFeed(deps(), { file: full, mode: 'full', dryRun: false, force: false });
  expect(provisionExitCode(result), JSON.stringify(result.plan.refused ?? result.applied?.audit.filter((r) => r.status !== 'succeeded'))).toBe(0);
};
const count = async (query: string, values: unknown[] = []): Promise<number> => Number((await h.database.pool.query<{ n: number }>(query, values)).rows[0]?.n ?? 0);
const activeIdentities = (): Promise<number> => count("select count(*)::int as n from trainsync.identities where org = 'default' and active");
const user = (r: HrRow): { id: string; hasAccess: boolean } => findUser(h.sim.state, r.email)!;

beforeAll(async () => {
  const hash = await hashConsolePassword(USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({ simulator: { seed: 21, sizes: { users: 40, groups: 2, courses: 2, results: 5 } }, env: { TRAINSYNC_CONSOLE_USERS: `${USER.name}:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0' } });
  server = (await startConsole({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: (org) => provisionDeps(h.app, org) }))!;
  base = `http://127.0.0.1:${server.port}`;
  files = feedDir();
  rows = rowsFromState(h.sim.state);
  full = files.write('hr.csv', toCsv(rows));
  await provisionWhole();
}, 180_000);

afterAll(async () => {
  await server?.close();
  await h?.close();
  files?.cleanup();
});

describe('the feed-shrink guard stands before every source of a whole workforce', () => {
  it('load-feed of a feed cut short, then reconcile --fix (CLI and the scheduled job): refused before planning, nobody disabled, nothing held', async () => {
    const active = await activeIdentities();
    expect(active).toBeGreaterThan(20);
    const cut = files.write('hr-cut.csv', toCsv(rows.filter((r) => r.status === 'active').slice(0, 6)));
    const loaded = await cli(['load-feed', cut]);
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stdout).toMatch(/removed/);
    const heldBefore = await count('select count(*)::int as n from trainsync.held_plans');
    h.sim.resetRequests();

    // The CLI, twice (one after the other: two repairs at once are one repair and one that
    // yields, test/reconcile-concurrent.test.ts).
    const fix = await cli(['reconcile', '--fix']);
    // Even a limit raised to everyone does not take it past this guard.
    const raised = await cli(['reconcile', '--fix', '--max-disable', '100%', '--json']);

    // The CLI: exit 2, the whole sentence, nothing read from the platform, nothing written or held.
    expect(fix.code, fix.stderr).toBe(2);
    expect(fix.stdout).toMatch(/REFUSED \(feed-shrink\): the last HR snapshot \(training\.employees\) lists 6 employees, fewer than 50% of the \d+ active employees known/);
    expect(fix.stderr).toMatch(/refused, nothing was planned/);
    expectNoApplyingCommand(fix.stdout + fix.stderr);
    expect(raised.code, raised.stderr).toBe(2);
    expect((JSON.parse(raised.stdout) as { plan: { refused: { reason: string } } }).plan.refused.reason).toBe('feed-shrink');
    expectNoApplyingCommand(raised.stdout + raised.stderr);

    // The worker's schedule: the job fails with the reason, and enqueues nothing.
    const worker = await h.app.queue.startWorkers([PROVISION_QUEUE]);
    try {
      const job = await h.app.queue.add(RECONCILE_FIX_JOB, reconcileFixJob.payload.parse({ trigger: 'schedule' }), { org: DEFAULT_ORG, waited: true });
      const [outcome] = await h.app.queue.waitFor(PROVISION_QUEUE, [job.id]);
      expect(outcome).toMatchObject({ status: 'failed' });
      expect(JSON.stringify(outcome)).toMatch(/feed-shrink|fewer than 50%/);
    } finally {
      await worker.close();
    }

    // The console's repair page plans through the same pipeline.
    const session = await consoleSession(base, USER);
    const repair = await session.get('/people/repair');
    expect(repair.status).toBe(200);
    expect(visible(repair.text)).toMatch(/fewer than 50% of the \d+ active employees known/);
    expectNoApplyingCommand(visible(repair.text));

    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect(await activeIdentities()).toBe(active);
    expect(await count('select count(*)::int as n from trainsync.held_plans')).toBe(heldBefore);
    expect(rows.filter((r) => r.status === 'active').every((r) => user(r).hasAccess)).toBe(true);

    // --allow-shrink says the snapshot is right: the disable limit still holds the repair for a
    // person; and --force alone does not apply it.
    const allowed = await cli(['reconcile', '--fix', '--allow-shrink']);
    const forced = await cli(['reconcile', '--fix', '--allow-shrink', '--force']);
    expect(allowed.code, allowed.stderr).toBe(2);
    expect(allowed.stdout).toMatch(/REFUSED \(max-disable\)/);
    expectNoApplyingCommand(allowed.stdout + allowed.stderr);
    const held = (await h.database.pool.query<{ id: string }>("select id from trainsync.held_plans where source = 'reconcile' order by id desc limit 1")).rows[0]!;
    expect(forced.code, forced.stderr).toBe(2);
    expect(forced.stderr).toMatch(/--force alone does not apply a plan past the disable limit/);
    expectNoApplyingCommand(forced.stdout + forced.stderr);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect(await activeIdentities()).toBe(active);

    // The whole feed again: the snapshot is right, the held repair is rejected, nothing to repair.
    expect(await rejectHeldPlan(deps(), Number(held.id), { by: 'test', role: 'cli' })).toMatchObject({ ok: true });
    await snapshotFeed(h.app.scopes.scope(DEFAULT_ORG), await readFeed(full), { mode: 'full' });
    const clean = await reconcileFix(deps(), { dryRun: true, force: false, wait: false });
    expect(reconcileFixExitCode(clean), JSON.stringify(clean.plan.refused)).toBe(0);
  }, 240_000);
});

describe('the console repair beside another repair of the organisation', () => {
  it('is not run, and the page says who is repairing (409), with nothing written', async () => {
    const session = await consoleSession(base, USER);
    const writes = writeCallCount(h.sim.requests);
    const answer = await underReconcileLock(provisionDeps(h.app, DEFAULT_ORG), { by: 'cli' }, () => session.post('/people/repair', { org: DEFAULT_ORG }, '/people/repair'));
    expect(answer.ran).toBe(true);
    const page = answer.ran ? answer.value : undefined;
    expect(page?.status).toBe(409);
    expect(visible(page?.text ?? '')).toMatch(/Not run: another drift repair of organisation default is running \(a repair from the command line on [^,]+:\d+, started .* UTC\); this one skipped: nothing was planned, enqueued or changed/);
    expect(writeCallCount(h.sim.requests)).toBe(writes);
  });
});

describe('a mass disable applies only with its count typed', () => {
  it('--force alone, a wrong --confirm, --confirm without --force are refused (exit 2, no write); the right count applies', async () => {
    const leavers = rows.filter((r) => r.status === 'active').slice(-8);
    const changed = rows.map((r) => (leavers.includes(r) ? { ...r, status: 'terminated' } : r));
    const feed = files.write('hr-eight-leavers.csv', toCsv(changed));
    h.sim.resetRequests();

    // Every way short of the count at once (each waits for the provisioning lock in turn), and the help.
    const [plain, alone, wrong, noForce, json, help, provisionHelp] = await Promise.all([
      cli(['provision', feed]),
      cli(['provision', feed, '--force']),
      cli(['provision', feed, '--force', '--confirm', '7']),
      cli(['provision', feed, '--confirm', '8']),
      cli(['provision', feed, '--force', '--json']),
      cli(['held', '--help']),
      cli(['provision', '--help']),
    ]);
    expect(plain.code, plain.stderr).toBe(2);
    expectNoApplyingCommand(plain.stdout + plain.stderr);
    expect(alone.code, alone.stderr).toBe(2);
    expect(alone.stderr).toMatch(/--force alone does not apply a plan past the disable limit of 5: the plan takes access away from people: to apply it, give --confirm N with --force/);
    expectNoApplyingCommand(alone.stdout + alone.stderr);
    expect(wrong.code, wrong.stderr).toBe(2);
    expect(stderrSaid(wrong.stderr)).toMatch(/"7" is not the number of people the plan takes access away from/);
    expectNoApplyingCommand(wrong.stdout + wrong.stderr);
    expect(noForce.code).toBe(2);
    expect(noForce.stderr).toMatch(/--confirm N goes with --force/);
    expect(json.code).toBe(2);
    expect((JSON.parse(json.stdout) as { plan: { refused: { reason: string } } }).plan.refused.reason).toBe('confirm');
    expectNoApplyingCommand(json.stdout + json.stderr);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect(leavers.every((r) => user(r).hasAccess)).toBe(true);

    // The held plans it made are the listing's; its lines print no count ready to paste either.
    const listing = await cli(['held']);
    expectNoApplyingCommand(listing.stdout + listing.stderr);
    expectNoApplyingCommand(help.stdout);
    expectNoApplyingCommand(provisionHelp.stdout);

    const right = await cli(['provision', feed, '--force', '--confirm', '8']);
    expect(right.code, right.stderr).toBe(0);
    expect(leavers.every((r) => !user(r).hasAccess)).toBe(true);
    // Put back for the next test: the whole workforce active again.
    await provisionWhole();
    expect(leavers.every((r) => user(r).hasAccess)).toBe(true);
  }, 240_000);

  it('approving a held plan takes the count it applies now: a count shown before a change on the platform is refused, naming the new one; the console asks the same', async () => {
    const leavers = rows.filter((r) => r.status === 'active').slice(0, 7);
    const feed = files.write('hr-seven-leavers.csv', toCsv(rows.map((r) => (leavers.includes(r) ? { ...r, status: 'terminated' } : r))));
    const held = await cli(['provision', feed]);
    expect(held.code, held.stderr).toBe(2);
    const plan = (await h.database.pool.query<{ id: string; disables: number }>("select id, disables from trainsync.held_plans where status = 'held' and source = 'feed' order by id desc limit 1")).rows[0]!;
    expect(plan.disables).toBe(7);
    // Meanwhile one of them is disabled by hand on the platform: the plan now disables 6.
    const gone = leavers[0]!;
    const response = await fetch(`${h.sim.url}/api/v2/users/${user(gone).id}/disable`, { method: 'PATCH', headers: { authorization: `Bearer ${h.sim.apiKey}` } });
    expect(response.status).toBe(204);
    await h.sim.resetRequests();

    // The CLI's stale count beside the console's refusals.
    const cliStaleRun = cli(['held', '--approve', plan.id, '--confirm', '7']);
    const session = await consoleSession(base, USER);
    const from = `/provisioning/held/${plan.id}`;
    const page = await session.get(from);
    expectNoApplyingCommand(visible(page.text));
    const bare = await session.post(`/provisioning/held/${plan.id}/approve`, {}, from);
    expect(bare.status).toBe(400);
    expectNoApplyingCommand(visible(bare.text));
    const stale = await session.post(`/provisioning/held/${plan.id}/approve`, { confirm: '7' }, from);
    expect(stale.status).toBe(400);
    expect(visible(stale.text)).toMatch(/took access away from 7 when it was held, and now would take it from 6 people/);
    const hostile = await session.post(`/provisioning/held/${plan.id}/approve`, { confirm: '6e0' }, from);
    expect(hostile.status).toBe(400);

    const cliStale = await cliStaleRun;
    expect(cliStale.code).toBe(2);
    expect(cliStale.stderr).toMatch(/now would take it from 6 people/);
    expectNoApplyingCommand(cliStale.stdout + cliStale.stderr);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect(await count('select count(*)::int as n from trainsync.held_plans where id = $1 and status = $2', [plan.id, 'held'])).toBe(1);

    const approved = await cli(['held', '--approve', plan.id, '--confirm', '6']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(leavers.every((r) => !user(r).hasAccess)).toBe(true);
  }, 240_000);
});
