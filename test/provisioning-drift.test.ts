import { owner } from './helpers/owner.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { reconcileFixJob } from '../jobs/reconcile-fix.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { loadConfig } from '../src/config.ts';
import { openActions } from '../src/provisioning/apply/actions-store.ts';
import { waitForActions } from '../src/provisioning/apply/enqueue.ts';
import { provisionFeed, type ProvisionOptions, type ProvisionResult } from '../src/provisioning/provision-feed.ts';
import { RECONCILE_FIX_JOB, reconcileFix } from '../src/provisioning/reconcile-fix.ts';
import { FORCE_ASK } from '../src/provisioning/pipeline/guards.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';
import { registerSchedulers, scheduleTable } from '../src/queue/schedulers.ts';
import { findUser, groupMembers, writeCallCount } from '../src/simulator/index.ts';
import { runCli } from './helpers/cli.ts';
import { feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * Drift: changes made on the platform by hand (through its API, as an admin's tools
 * would) after trainsync applied a feed. The same feed, or `reconcile --fix`, must
 * bring the platform back to what HR says; with no drift, nothing is written.
 */

let h: SyncHarness;
let files: ReturnType<typeof feedDir>;
let rows: HrRow[];
let feed: string;
let leaver: HrRow;

function user(email: string) {
  const found = findUser(h.sim.state, email);
  if (!found) throw new Error(`no user ${email} on the simulator`);
  return found;
}

/** A change made on the platform outside trainsync, over the API. */
async function byHand(method: 'PATCH' | 'DELETE' | 'POST', path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${h.sim.url}/api/v2/${path}`, {
    method,
    headers: { authorization: `Bearer ${h.sim.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.status).toBe(204);
}

function provision(file: string, options: Partial<ProvisionOptions> = {}, deps = provisionDeps(h.app, 'default')): Promise<ProvisionResult> {
  return provisionFeed(deps, { file, mode: 'full', dryRun: false, force: false, ...options });
}

/** Runs `work` and returns how many write calls reached the platform meanwhile. */
async function writesDuring(work: () => Promise<unknown>): Promise<number> {
  const before = writeCallCount(h.sim.requests);
  await work();
  return writeCallCount(h.sim.requests) - before;
}

/** An active employee with at least one group, other than those given. */
function activeMember(except: readonly HrRow[]): HrRow {
  const found = rows.find((r) => r.status === 'active' && r.groups.length > 0 && !except.includes(r));
  if (!found) throw new Error('no active employee with a group in the fixture');
  return found;
}

beforeAll(async () => {
  h = await createSyncHarness({ simulator: { seed: 11, sizes: { users: 40, groups: 3, courses: 5, results: 20 } } });
  files = feedDir();
  rows = rowsFromState(h.sim.state);
  leaver = rows.filter((r) => r.status === 'active')[3]!;
  leaver.status = 'terminated';
  feed = files.write('hr.csv', toCsv(rows));
  const first = await provision(feed);
  expect(first.plan.refused).toBeUndefined();
  expect(user(leaver.email).hasAccess).toBe(false);
});
afterAll(async () => {
  await h?.close();
  files?.cleanup();
});

describe('provisioning plans against the platform as it is now', () => {
  it('an identical feed with no drift makes zero writes', async () => {
    let result: ProvisionResult | undefined;
    const writes = await writesDuring(async () => {
      result = await provision(feed);
    });
    expect(writes).toBe(0);
    expect(result!.plan.actions).toEqual([]);
    expect(result!.plan.repairs).toBe(0);
    // It did read the platform: one page of GET users (40 accounts).
    expect(result!.platformRequests).toBe(1);
    expect(result!.plan.platform).toMatch(/40 accounts \(read now through GET users\)/);
  });

  it('a leaver enabled again by hand: --dry-run lists the repair and changes nothing; the same feed disables them again', async () => {
    const account = user(leaver.email);
    await byHand('PATCH', `users/${account.id}/enable`);
    expect(account.hasAccess).toBe(true);

    let dry: ProvisionResult | undefined;
    expect(await writesDuring(async () => (dry = await provision(feed, { dryRun: true })))).toBe(0);
    expect(account.hasAccess).toBe(true);
    expect(dry!.plan.counts.disable).toBe(1);
    expect(dry!.plan.repairs).toBe(1);
    const [repair] = dry!.plan.actions;
    expect(repair).toMatchObject({ kind: 'disable', employeeId: leaver.employee_id, before: { active: true }, after: { active: false } });
    expect(repair!.repair).toMatch(/^platform shows access \(GET users\); HR says leaver since \d{4}-\d{2}-\d{2}$/);

    const applied = await provision(feed);
    expect(applied.plan.actions.map((a) => a.kind)).toEqual(['disable']);
    expect(applied.applied?.audit.map((r) => r.status)).toEqual(['succeeded']);
    expect(account.hasAccess).toBe(false);
    const audit = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').select(['after']).where('action_id', '=', repair!.id).executeTakeFirstOrThrow();
    expect(audit.after).toMatchObject({ active: false, repair: repair!.repair });

    // Repaired: the next run of the same feed has nothing to write.
    expect(await writesDuring(() => provision(feed))).toBe(0);
  });

  it('an account deleted by hand is created again with its groups, and the identity follows the new account', async () => {
    const employee = activeMember([leaver]);
    const old = user(employee.email);
    // An admin must take the seat away before the platform lets them delete the account.
    await byHand('PATCH', `users/${old.id}/disable`);
    await byHand('DELETE', `users/${old.id}`);
    expect(findUser(h.sim.state, employee.email)).toBeUndefined();

    const result = await provision(feed);
    expect(result.plan.counts['create-user']).toBe(1);
    const create = result.plan.actions.find((a) => a.kind === 'create-user')!;
    expect(create.id).toMatch(new RegExp(`^create-user:${employee.email.toLowerCase().replace(/[.+]/g, '\\$&')}:v\\d+$`));
    expect(create.repair).toMatch(/no longer lists account .*HR says active: created again/);
    expect(result.plan.actions.filter((a) => a.kind === 'add-to-group').map((a) => a.groupId).sort()).toEqual(employee.groups);
    expect(result.applied?.audit.every((r) => r.status === 'succeeded')).toBe(true);

    const created = user(employee.email);
    expect(created.id).not.toBe(old.id);
    expect(created.hasAccess).toBe(true);
    for (const groupId of employee.groups) expect(groupMembers(h.sim.state, groupId)).toContain(created.id);
    const identity = await owner(h.app).db.selectFrom('trainsync.identities').selectAll().where('employee_id', '=', employee.employee_id).executeTakeFirstOrThrow();
    expect(identity.platform_user_id).toBe(created.id);
    expect([...identity.groups].sort()).toEqual(employee.groups);

    expect(await writesDuring(() => provision(feed))).toBe(0);
  });

  it('an active employee whose access was removed by hand: restored by default, only reported under the keep policy', async () => {
    const employee = rows.filter((r) => r.status === 'active')[7]!;
    const account = user(employee.email);
    await byHand('PATCH', `users/${account.id}/disable`);

    const keepDeps = { ...provisionDeps(h.app, 'default'), drift: { freshnessMinutes: 15, accessRemoved: 'keep' as const } };
    let kept: ProvisionResult | undefined;
    expect(await writesDuring(async () => (kept = await provision(feed, {}, keepDeps)))).toBe(0);
    expect(kept!.plan.actions).toEqual([]);
    expect(kept!.plan.drift.map((d) => d.employeeId)).toEqual([employee.employee_id]);
    expect(account.hasAccess).toBe(false);

    const restored = await provision(feed);
    expect(restored.plan.actions).toHaveLength(1);
    expect(restored.plan.actions[0]).toMatchObject({ kind: 'enable', employeeId: employee.employee_id });
    expect(restored.plan.actions[0]!.repair).toMatch(/platform shows no access .*HR says active/);
    expect(account.hasAccess).toBe(true);
  });

  it('training.users serves as the platform state when a users sync ran after the last write, and not before', async () => {
    const account = user(leaver.email);
    await byHand('PATCH', `users/${account.id}/enable`);
    const sync = await h.sync(['users']);
    expect(sync.map((o) => o.status)).toEqual(['completed']);

    const result = await provision(feed);
    expect(result.platformRequests).toBe(0);
    expect(result.plan.platform).toMatch(/training\.users, refreshed/);
    expect(result.plan.actions[0]!.repair).toMatch(/^platform shows access \(training\.users as of .* UTC\); HR says leaver since/);
    expect(account.hasAccess).toBe(false);

    // That listing predates the disable just made: the next plan reads GET users, and writes nothing.
    let again: ProvisionResult | undefined;
    expect(await writesDuring(async () => (again = await provision(feed)))).toBe(0);
    expect(again!.platformRequests).toBe(1);
  });
});

describe('reconcile --fix: drift repair without a new feed', () => {
  it('disables a leaver enabled again by hand (CLI: --dry-run changes nothing, then the repair, exit 0)', async () => {
    const account = user(leaver.email);
    await byHand('PATCH', `users/${account.id}/enable`);

    const before = writeCallCount(h.sim.requests);
    const dry = await runCli(['reconcile', '--fix', '--dry-run', '--json'], h.env);
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    const plan = (JSON.parse(dry.stdout) as { plan: { actions: Array<{ kind: string; employeeId: string; repair?: string }> } }).plan;
    expect(plan.actions).toEqual([expect.objectContaining({ kind: 'disable', employeeId: leaver.employee_id, repair: expect.stringMatching(/^platform shows access/) })]);
    expect(writeCallCount(h.sim.requests)).toBe(before);
    expect(account.hasAccess).toBe(true);

    const fix = await runCli(['reconcile', '--fix'], h.env);
    expect(fix.code).toBe(0);
    expect(fix.stdout).toMatch(/repair: disable .*platform shows access/);
    expect(account.hasAccess).toBe(false);

    const none = await runCli(['reconcile', '--fix'], h.env);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/No drift: nothing to repair/);

    // --dry-run belongs to --fix: alone it is a usage error, and nothing runs.
    const usage = await runCli(['reconcile', '--dry-run'], h.env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--dry-run only go with --fix');
  });

  it('--reassert-groups adds back a membership removed by hand (the API cannot read memberships)', async () => {
    const employee = activeMember([leaver]);
    const account = user(employee.email);
    const groupId = employee.groups[0]!;
    await byHand('DELETE', `groups/${groupId}/users/${account.id}`);
    expect(groupMembers(h.sim.state, groupId)).not.toContain(account.id);

    const result = await reconcileFix(provisionDeps(h.app, 'default'), { dryRun: false, force: false, wait: true, reassertGroups: true });
    expect(result.plan.refused).toBeUndefined();
    expect(result.plan.actions.every((a) => a.kind === 'add-to-group' && a.repair !== undefined)).toBe(true);
    expect(result.applied?.audit.every((r) => r.status === 'succeeded')).toBe(true);
    expect(groupMembers(h.sim.state, groupId)).toContain(account.id);
  });

  it('runs as the reconcile-fix job of the worker; its schedule is off unless TRAINSYNC_CRON_RECONCILE_FIX is set', async () => {
    const { catalog } = h.app.queue;
    expect(scheduleTable(catalog, loadConfig({})).map((s) => s.job)).not.toContain(RECONCILE_FIX_JOB);
    expect(scheduleTable(catalog, loadConfig({ TRAINSYNC_CRON_RECONCILE_FIX: '15 3 * * *' }))).toContainEqual(expect.objectContaining({ job: 'reconcile-fix', queue: 'provision', pattern: '15 3 * * *' }));
    expect(scheduleTable(catalog, loadConfig({ TRAINSYNC_CRON_RECONCILE_FIX: '' })).map((s) => s.job)).not.toContain(RECONCILE_FIX_JOB);
    // The worker registers it, and removes it once the setting is emptied.
    const registered = async (): Promise<unknown[]> => (await h.app.queue.schedules()).filter((s) => s.id === RECONCILE_FIX_JOB).map((s) => s.pattern);
    await registerSchedulers(h.app.queue, loadConfig({ ...h.env, TRAINSYNC_CRON_RECONCILE_FIX: '15 3 * * *' }), h.app.log);
    expect(await registered()).toEqual(['15 3 * * *']);
    await registerSchedulers(h.app.queue, loadConfig({ ...h.env, TRAINSYNC_CRON_RECONCILE_FIX: '' }), h.app.log);
    expect(await registered()).toEqual([]);

    const account = user(leaver.email);
    await byHand('PATCH', `users/${account.id}/enable`);
    const worker = await h.app.queue.startWorkers([PROVISION_QUEUE]);
    try {
      const job = await h.app.queue.add(RECONCILE_FIX_JOB, reconcileFixJob.payload.parse({ trigger: 'schedule' }), { org: DEFAULT_ORG, waited: true });
      const [outcome] = await h.app.queue.waitFor(PROVISION_QUEUE, [job.id]);
      expect(outcome).toMatchObject({ status: 'completed', result: { repairs: 1, enqueued: 1 } });
      const open = await openActions(owner(h.app).scope('default'));
      await waitForActions(provisionDeps(h.app, 'default'), open.map((r) => r.actionId));
    } finally {
      await worker.close();
    }
    expect(account.hasAccess).toBe(false);
  });
});

describe('the guards count repairs', () => {
  it('refuses a mass repair of leavers without --force, and applies it with --force and its typed count', async () => {
    // Eight leavers, disabled with --force (a legitimate mass leave), then all enabled again by hand.
    const leavers = rows.filter((r) => r.status === 'active' && r !== leaver).slice(10, 17);
    for (const r of leavers) r.status = 'terminated';
    const many = files.write('hr-many-leavers.csv', toCsv(rows));
    // --force alone no longer applies a plan past the limit: the count is typed too.
    const alone = await provision(many, { force: true });
    expect(alone.plan.refused?.reason).toBe('confirm');
    const applied = await provision(many, { force: true, confirm: { typed: 7, ask: FORCE_ASK } });
    expect(applied.plan.counts.disable).toBe(7);
    for (const r of [leaver, ...leavers]) await byHand('PATCH', `users/${user(r.email).id}/enable`);

    let refused: ProvisionResult | undefined;
    expect(await writesDuring(async () => (refused = await provision(many)))).toBe(0);
    expect(refused!.plan.refused?.reason).toBe('max-disable');
    expect(refused!.plan.refused?.message).toMatch(/disable 8 employees \(8 of them repair drift/);
    expect([leaver, ...leavers].every((r) => user(r.email).hasAccess)).toBe(true);

    const fixRefused = await reconcileFix(provisionDeps(h.app, 'default'), { dryRun: false, force: false, wait: true });
    expect(fixRefused.plan.refused?.reason).toBe('max-disable');
    expect(fixRefused.applied).toBeUndefined();

    const forced = await provision(many, { force: true, confirm: { typed: 8, ask: FORCE_ASK } });
    expect(forced.plan.repairs).toBe(8);
    expect([leaver, ...leavers].every((r) => !user(r.email).hasAccess)).toBe(true);
  });
});

describe('a delta feed reads only the accounts it touches', () => {
  let big: SyncHarness;
  beforeAll(async () => {
    big = await createSyncHarness({ simulator: { seed: 12, sizes: { users: 160, groups: 2, courses: 2, results: 5 } } });
  });
  afterAll(async () => {
    await big?.close();
  });

  it('one GET users?userId= per account when that costs less than every page; a deleted one is seen as gone', async () => {
    const all = rowsFromState(big.sim.state);
    const [leaving, deleting] = all.filter((r) => r.status === 'active');
    leaving!.status = 'terminated';
    const full = await provisionFeed(provisionDeps(big.app, 'default'), { file: files.write('big.csv', toCsv(all)), mode: 'full', dryRun: false, force: false });
    expect(full.plan.refused).toBeUndefined();

    const leaverAccount = findUser(big.sim.state, leaving!.email)!;
    const deletedAccount = findUser(big.sim.state, deleting!.email)!;
    const hand = async (method: string, path: string): Promise<void> => {
      const response = await fetch(`${big.sim.url}/api/v2/${path}`, { method, headers: { authorization: `Bearer ${big.sim.apiKey}` } });
      expect(response.status).toBe(204);
    };
    await hand('PATCH', `users/${leaverAccount.id}/enable`);
    await hand('PATCH', `users/${deletedAccount.id}/disable`);
    await hand('DELETE', `users/${deletedAccount.id}`);

    const readsBefore = big.sim.requests.filter((r) => r.route === 'GET /api/v2/users').length;
    const delta = await provisionFeed(provisionDeps(big.app, 'default'), { file: files.write('big-delta.csv', toCsv([leaving!, deleting!])), mode: 'delta', dryRun: true, force: false });
    const reads = big.sim.requests.filter((r) => r.route === 'GET /api/v2/users').slice(readsBefore);
    // The first page (to learn there are 4), then one lookup per account instead of 3 more pages.
    expect(delta.platformRequests).toBe(3);
    expect(reads.map((r) => new URLSearchParams(r.query).get('userId')).sort()).toEqual([null, deletedAccount.id, leaverAccount.id].sort());
    expect(delta.plan.actions.filter((a) => a.kind !== 'add-to-group').map((a) => [a.kind, a.employeeId])).toEqual([
      ['disable', leaving!.employee_id],
      ['create-user', deleting!.employee_id],
    ]);
    expect(delta.plan.actions.every((a) => a.repair !== undefined)).toBe(true);
  });
});
