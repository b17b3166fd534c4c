import { owner } from './helpers/owner.ts';
import { parse as parseCsv } from 'csv-parse/sync';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { findUser, setUserAccess, writeCallCount } from '../src/simulator/index.ts';
import { runCli, stderrSaid, type CliRun } from './helpers/cli.ts';
import { feedDir } from './helpers/hr-feed.ts';
import { consoleSession, type ConsoleSession } from './helpers/console-http.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * The guards before and around a provisioning plan, through the real CLI, worker, Postgres,
 * Redis and the simulator (seed 1: the organisation examples/hr-feed.csv describes):
 * a dry run that reads in one screen, a full feed that shrank to nothing refused before
 * planning, and reconcile, its repair and both console pages telling the same story about
 * the same data, however old the platform's user list is.
 */

const USER = { name: 'olga', password: 'guards-pass-1234' };
const GUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const FEED = 'examples/hr-feed.csv';

let h: SyncHarness;
let server: ConsoleServer;
let base: string;
let session: ConsoleSession;
let files: ReturnType<typeof feedDir>;

const env = (more: Record<string, string> = {}): Record<string, string> => ({ ...h.env, LOG_LEVEL: 'warn', ...more });
const cli = (args: string[], more: Record<string, string> = {}): Promise<CliRun> => runCli(args, env(more));
const count = async (query: string): Promise<number> => Number((await h.database.pool.query<{ n: number }>(query)).rows[0]?.n ?? 0);
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? '';

interface ReconcileJson {
  counts: Record<string, number>;
  platformList: { readAt: string | null; changesSince: number; repairedSince: number };
}
interface FixJson {
  plan: { counts: Record<string, number>; actions: Array<{ kind: string; employeeId: string; repair?: string }> };
}

async function reconcileJson(): Promise<ReconcileJson> {
  const run = await cli(['reconcile', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as ReconcileJson;
}

async function fixDryRunJson(): Promise<FixJson> {
  const run = await cli(['reconcile', '--fix', '--dry-run', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as FixJson;
}


async function page(path: string): Promise<string> {
  const answer = await session.get(path);
  expect(answer.status, path).toBe(200);
  return answer.text;
}

/** What the People page and the Drift repair page count: leavers with access, and the disables the repair plans. */
async function consoleCounts(): Promise<{ people: number; beside: number; disables: number; age: string }> {
  const people = await page('/people');
  const repair = await page('/people/repair');
  const number = (html: string, id: string): number => Number(new RegExp(`id="${id}">(\\d+)<`).exec(html)?.[1] ?? Number.NaN);
  return {
    people: number(people, 'count-leaver_with_access'),
    beside: number(repair, 'beside-leavers'),
    disables: number(repair, 'plan-disables'),
    age: /<p id="platform-list-age">([^<]*)</.exec(people)?.[1] ?? '',
  };
}

beforeAll(async () => {
  const hash = await hashConsolePassword(USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({ simulator: { seed: 1 }, env: { TRAINSYNC_CONSOLE_USERS: `${USER.name}:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0' } });
  server = (await startConsole({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: (org) => provisionDeps(h.app, org) }))!;
  base = `http://127.0.0.1:${server.port}`;
  session = await consoleSession(base, USER);
  files = feedDir();
  // The platform's users and groups in the warehouse, as a deployment has them before provisioning.
  const synced = await h.sync(['users', 'groups']);
  expect(synced.every((o) => o.status === 'completed')).toBe(true);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await h?.close();
  files?.cleanup();
});

describe('provisioning guards (CLI, worker, Postgres, Redis, simulator)', () => {
  it('a dry run at COLUMNS=100 shows each action kind\'s count with 5 examples by group name; --output has every action', async () => {
    const jsonl = files.write('plan.jsonl', '');
    const csv = files.write('plan.csv', '');
    h.sim.resetRequests();
    const [run, asCsv, json] = await Promise.all([
      cli(['provision', FEED, '--dry-run', '--output', jsonl], { COLUMNS: '100' }),
      cli(['provision', FEED, '--dry-run', '--output', csv], { COLUMNS: '100' }),
      cli(['provision', FEED, '--dry-run', '--json']),
    ]);
    // Exit 1: the example feed's one bad row, on purpose.
    expect(run.code, run.stderr).toBe(1);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    const plan = (JSON.parse(json.stdout) as FixJson).plan;
    const lines = run.stdout.trimEnd().split('\n');
    // Off a terminal stderr is JSON records, which no width binds: the lines meant for a person fit.
    for (const line of [...lines, ...run.stderr.trimEnd().split('\n').filter((l) => !l.startsWith('{'))]) expect([...line].length, line).toBeLessThanOrEqual(100);
    // One screen, not one line per action (the plan has over 300).
    expect(plan.actions.length).toBeGreaterThan(300);
    expect(lines.length).toBeLessThan(45);
    // Each kind: its count, then min(count, 5) examples, then "… and N more" past 5.
    for (const kind of ['create-user', 'enable', 'disable', 'add-to-group', 'remove-from-group']) {
      const n = plan.counts[kind] ?? 0;
      const at = lines.findIndex((l) => new RegExp(`^│ ${kind} +│ ${n} +│`).test(l));
      expect(at, `${kind} row`).toBeGreaterThan(0);
      const cells = lines.slice(at, at + Math.min(n, 5) + (n > 5 ? 1 : 0)).map((l) => l.split('│')[3]!.trim());
      expect(cells.filter((c) => c !== '' && !c.startsWith('…')), kind).toHaveLength(Math.min(n, 5));
      if (n > 5) expect(cells.at(-1)).toBe(`… and ${n - 5} more`);
    }
    // Groups by name: the names of training.groups, and no GUID anywhere a person reads.
    const names = (await h.database.pool.query<{ name: string }>('select name from training.groups')).rows.map((r) => r.name);
    const shown = [...run.stdout.matchAll(/→ ([^│]+?)\s*│/g)].map((m) => m[1]!);
    expect(shown.length).toBe(5);
    for (const name of shown) expect(names).toContain(name);
    expect(run.stdout).not.toMatch(GUID);
    expect(run.stdout).toContain(`every action (${plan.actions.length}) is in ${jsonl} (JSON Lines)`);
    // The file: every action, one a line, with the GUID and the group's name.
    const written = readFileSync(jsonl, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { id: string; kind: string; groupId: string | null; groupName: string | null });
    expect(written.map((a) => a.id).sort()).toEqual(plan.actions.map((a) => (a as unknown as { id: string }).id).sort());
    for (const a of written.filter((w) => w.kind === 'add-to-group')) {
      expect(a.groupId).toMatch(GUID);
      expect(names).toContain(a.groupName);
    }
    expect(asCsv.code, asCsv.stderr).toBe(1);
    expect(asCsv.stdout).toContain('(CSV)');
    const records = parseCsv(readFileSync(csv, 'utf8'), { columns: true }) as Array<{ action_id: string; group_name: string }>;
    expect(records.map((r) => r.action_id).sort()).toEqual(written.map((a) => a.id).sort());
  }, 120_000);

  it('reconcile right after provision, before any users sync, counts the leavers just disabled as repaired, and agrees with its repair and both console pages', async () => {
    const applied = await cli(['provision', FEED]);
    expect(applied.code, applied.stderr).toBe(1);
    const disabled = (await h.database.pool.query<{ employee_id: string }>("select employee_id from trainsync.provisioning_actions where kind = 'disable' and status = 'succeeded' order by 1")).rows.map((r) => r.employee_id);
    expect(disabled).toHaveLength(3);
    // The warehouse's user list predates the run: it still shows those three with access.
    expect(await count(`select count(*)::int as n from training.users u join trainsync.identities i on i.platform_user_id = u.user_id where u.has_access and i.employee_id in ('${disabled.join("','")}')`)).toBe(3);

    // The audit trail names groups: the view has the name beside the GUID, the console shows the name.
    const audited = (await h.database.pool.query<{ group_id: string; group_name: string }>("select group_id::text, group_name from trainsync.provisioning_audit where kind = 'add-to-group' order by id desc limit 1")).rows[0]!;
    expect(audited.group_name).toBe((await h.database.pool.query<{ name: string }>('select name from training.groups where group_id = $1', [audited.group_id])).rows[0]!.name);
    const trail = await page('/provisioning');
    expect(trail).toContain(`<span class="group" title="${audited.group_id}" data-id="${audited.group_id}">${audited.group_name}</span>`);

    const report = await reconcileJson();
    expect(report.counts.leaver_with_access).toBe(0);
    expect(report.platformList.repairedSince).toBe(3);
    expect(report.platformList.changesSince).toBe(await count("select count(*)::int as n from trainsync.provisioning_actions where status = 'succeeded'"));
    const text = await cli(['reconcile']);
    expect(text.stdout).toMatch(/^Platform user list read \d{4}-\d\d-\d\d \d\d:\d\d UTC \(the last users sync, training\.users\); trainsync has applied \d+ changes since/m);
    expect(text.stdout).toContain('3 leavers it shows with access were disabled by trainsync since: counted as repaired, not as leaver_with_access.');

    const fix = await fixDryRunJson();
    expect(fix.plan.counts.disable).toBe(0);
    const fixText = await cli(['reconcile', '--fix', '--dry-run']);
    expect(fixText.stdout).toMatch(/^reconcile counts 0 leaver_with_access, 0 active_without_account, 0 pending_action\. Platform user list read /m);

    const seen = await consoleCounts();
    expect(seen).toMatchObject({ people: 0, beside: 0, disables: 0 });
    expect(seen.age).toContain('3 leavers it shows with access were disabled by trainsync since');
  }, 180_000);

  it('a leaver whose access is restored by hand is one leaver with access to reconcile, its repair and both pages, once a users sync reads it', async () => {
    const [leaver] = (await h.database.pool.query<{ email: string; employee_id: string }>("select email, employee_id from trainsync.provisioning_actions where kind = 'disable' and status = 'succeeded' order by employee_id limit 1")).rows;
    setUserAccess(h.sim.state, findUser(h.sim.state, leaver!.email)!, true);
    const synced = await h.sync(['users']);
    expect(synced.every((o) => o.status === 'completed')).toBe(true);

    const report = await reconcileJson();
    expect(report.counts.leaver_with_access).toBe(1);
    expect(report.platformList).toMatchObject({ repairedSince: 0, changesSince: 0 });
    const fix = await fixDryRunJson();
    expect(fix.plan.counts.disable).toBe(1);
    expect(fix.plan.actions.find((a) => a.kind === 'disable')).toMatchObject({ employeeId: leaver!.employee_id, repair: expect.any(String) });
    expect(await consoleCounts()).toMatchObject({ people: 1, beside: 1, disables: 1 });
  }, 120_000);

  it('a full feed of a header only is refused before planning: exit 2, no platform write, nothing planned or held; the reason names the rows, the employees known, the share and the flag', async () => {
    const header = files.write('header-only.csv', `${readFileSync(FEED, 'utf8').split('\n')[0]}\n`);
    const cut = files.write('cut-short.csv', `${readFileSync(FEED, 'utf8').split('\n').slice(0, 11).join('\n')}\n`);
    const known = await count(`select count(*)::int as n from (select employee_id from trainsync.identities where active union select employee_id from training.employees where status = 'active' and removed_at is null) k`);
    const before = { actions: await count('select count(*)::int as n from trainsync.provisioning_actions'), held: await count('select count(*)::int as n from trainsync.held_plans') };
    h.sim.resetRequests();
    const run = await cli(['provision', header], { COLUMNS: '120' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toContain(`${header}: 0 rows read, 0 rejected`);
    expect(run.stdout.replace(/\s+/g, ' ')).toContain(`REFUSED (empty-feed): the feed has 0 data rows (a header only, or nothing), and in full mode every one of the ${known} active employees known would be a leaver; nothing was planned.`);
    expect(run.stdout).not.toContain('Plan (');
    expect(stderrSaid(run.stderr).replace(/\s+/g, ' ')).toContain(`refused, nothing was planned: 0 data rows in a full feed; ${Math.ceil(known / 2)} needed (50% of ${known} active employees)`);
    expect(lastLine(stderrSaid(run.stderr))).toBe('  if the feed is right: rerun with --allow-shrink');
    // No platform request at all (not even the read a plan makes), nothing planned, enqueued or held.
    expect(h.sim.requests.filter((r) => r.path.toLowerCase().startsWith('/api/v2/') && !/login/i.test(r.path))).toEqual([]);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect({ actions: await count('select count(*)::int as n from trainsync.provisioning_actions'), held: await count('select count(*)::int as n from trainsync.held_plans') }).toEqual(before);
    expect((await h.database.pool.query("select rows, actions, refused from trainsync.feeds order by id desc limit 1")).rows[0]).toEqual({ rows: 0, actions: 0, refused: 'empty-feed' });

    // Ten rows of a workforce of hundreds: cut short, refused the same way (the share).
    const short = await cli(['provision', cut, '--json']);
    expect(short.code).toBe(2);
    const refusal = JSON.parse(short.stdout) as { refused: { reason: string; message: string }; activeEmployees: number; feed: { dataRows: number } };
    expect(refusal).toMatchObject({ refused: { reason: 'feed-shrink' }, activeEmployees: known, feed: { dataRows: 10 } });
    expect(refusal.refused.message).toContain(`the feed has 10 data rows, fewer than 50% of the ${known} active employees known`);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    // A delta feed lists changes only: the guard stands aside.
    const delta = await cli(['provision', cut, '--mode', 'delta', '--dry-run']);
    expect(delta.code, delta.stderr).toBe(0);
  }, 120_000);

  it('with --allow-shrink the header-only feed is planned and held by the disable limit; the last line names the plan and the command that approves it', async () => {
    const header = files.write('header-only.csv', `${readFileSync(FEED, 'utf8').split('\n')[0]}\n`);
    const actionsBefore = await count('select count(*)::int as n from trainsync.provisioning_actions');
    h.sim.resetRequests();
    const run = await cli(['provision', header, '--allow-shrink'], { COLUMNS: '80' });
    expect(run.code, run.stderr).toBe(2);
    const held = (await h.database.pool.query<{ id: string; disables: number; status: string }>('select id, disables, status from trainsync.held_plans order by id desc limit 1')).rows[0]!;
    expect(held.status).toBe('held');
    // Every active employee, and the leaver whose access was restored by hand (a repair).
    expect(held.disables).toBe((await count('select count(*)::int as n from trainsync.identities where active')) + 1);
    expect(run.stdout).toMatch(/^REFUSED \(max-disable\): The plan would disable \d+ employees/m);
    const last = lastLine(stderrSaid(run.stderr));
    expect(last).toBe(`  approve plan #${held.id}: trainsync held --approve ${held.id} --confirm N`);
    // The count to type is said, not pasted into the command.
    expect(stderrSaid(run.stderr)).toContain(`N = ${held.disables}.`);
    expect([...last].length).toBeLessThanOrEqual(80);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect(await count('select count(*)::int as n from trainsync.provisioning_actions')).toBe(actionsBefore);
  }, 120_000);
});
