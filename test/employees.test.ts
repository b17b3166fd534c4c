import { owner } from './helpers/owner.ts';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { feedReadOptions, parseFeedProfile } from '../src/provisioning/feed/profile.ts';
import { readFeed } from '../src/provisioning/feed/read.ts';
import type { ReadFeedOptions } from '../src/provisioning/feed/types.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { snapshotFeed, UnreadableFeedError } from '../src/provisioning/snapshot-feed.ts';
import { findUser, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import type { EmployeeSnapshotCounts } from '../src/provisioning/employees-store.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { rowsFromState, toCsv } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

let t: TestDatabase;
let dir: string;
beforeAll(async () => {
  t = await createTestDatabase();
  dir = await mkdtemp(path.join(tmpdir(), 'trainsync-employees-'));
});
afterAll(async () => {
  await t?.drop();
  await rm(dir, { recursive: true, force: true });
});

const HEADER = 'employee_id,email,first_name,last_name,status,Department,Manager';
const T = (n: number): Date => new Date(Date.UTC(2025, 0, n, 9, 0, 0));

let feedNo = 0;
async function snapshot(lines: readonly string[], mode: 'full' | 'delta', at: Date, read: ReadFeedOptions = {}): Promise<EmployeeSnapshotCounts> {
  feedNo += 1;
  const file = path.join(dir, `feed-${feedNo}.csv`);
  await writeFile(file, `${[HEADER, ...lines].join('\n')}\n`);
  const feed = await readFeed(file, read);
  return snapshotFeed(t.scope(), feed, { mode, at });
}

function employees() {
  return t.db.selectFrom('training.employees').selectAll().orderBy('employee_id').execute();
}

async function history(): Promise<[string, string, string | null, string, string, Record<string, unknown>][]> {
  const rows = await t.db.selectFrom('training.employee_history').selectAll().orderBy('employee_id').orderBy('valid_from').execute();
  return rows.map((r) => [r.employee_id, r.valid_from.toISOString(), r.valid_to?.toISOString() ?? null, r.status, r.email, r.attributes]);
}

const iso = (n: number): string => T(n).toISOString();

describe('employee snapshots over three feeds', () => {
  it('a first feed: everyone joins, each with one open history row', async () => {
    const counts = await snapshot(
      ['E1,Ann@Example.com,Ann,Smith,active,Finance,E9', 'E2,bob@example.com,Bob,Jones,active,Sales,E9', 'E3,cy@example.com,Cy,Lee,active,Ops,'],
      'full',
      T(1),
    );
    expect(counts).toMatchObject({ listed: 3, joined: 3, changed: 0, returned: 0, removed: 0, unchanged: 0 });
    expect(await history()).toEqual([
      ['E1', iso(1), null, 'active', 'ann@example.com', { Department: 'Finance', Manager: 'E9' }],
      ['E2', iso(1), null, 'active', 'bob@example.com', { Department: 'Sales', Manager: 'E9' }],
      ['E3', iso(1), null, 'active', 'cy@example.com', { Department: 'Ops' }],
    ]);
    const rows = await employees();
    expect(rows.map((e) => [e.employee_id, e.email, e.first_name, e.status, e.attributes, e.first_seen_at, e.last_seen_at, e.removed_at])).toEqual([
      ['E1', 'ann@example.com', 'Ann', 'active', { Department: 'Finance', Manager: 'E9' }, T(1), T(1), null],
      ['E2', 'bob@example.com', 'Bob', 'active', { Department: 'Sales', Manager: 'E9' }, T(1), T(1), null],
      ['E3', 'cy@example.com', 'Cy', 'active', { Department: 'Ops' }, T(1), T(1), null],
    ]);
  });

  it('a second feed: a change of department, a leaver marked removed, a joiner', async () => {
    const counts = await snapshot(
      ['E1,ann@example.com,Ann,Smith,active,Engineering,E9', 'E2,bob@example.com,Bob,Jones,active,Sales,E9', 'E4,di@example.com,Di,Wu,active,Ops,E3'],
      'full',
      T(2),
    );
    expect(counts).toMatchObject({ listed: 3, joined: 1, changed: 1, returned: 0, removed: 1, unchanged: 1 });
    expect(await history()).toEqual([
      ['E1', iso(1), iso(2), 'active', 'ann@example.com', { Department: 'Finance', Manager: 'E9' }],
      ['E1', iso(2), null, 'active', 'ann@example.com', { Department: 'Engineering', Manager: 'E9' }],
      ['E2', iso(1), null, 'active', 'bob@example.com', { Department: 'Sales', Manager: 'E9' }],
      // The leaver's row closes: "as of" a later day E3 is no employee.
      ['E3', iso(1), iso(2), 'active', 'cy@example.com', { Department: 'Ops' }],
      ['E4', iso(2), null, 'active', 'di@example.com', { Department: 'Ops', Manager: 'E3' }],
    ]);
    const rows = await employees();
    expect(rows.map((e) => [e.employee_id, e.removed_at, e.last_seen_at, e.updated_at])).toEqual([
      ['E1', null, T(2), T(2)],
      ['E2', null, T(2), T(1)],
      ['E3', T(2), T(1), T(2)],
      ['E4', null, T(2), T(2)],
    ]);
  });

  it('a third feed: the leaver is re-hired, removed_at cleared and a new history row opened', async () => {
    const counts = await snapshot(
      [
        'E1,ann@example.com,Ann,Smith,active,Engineering,E9',
        'E2,bob@example.com,Bob,Jones,active,Sales,E9',
        'E3,cy@example.com,Cy,Lee,active,Ops,E4',
        'E4,di@example.com,Di,Wu,active,Ops,E3',
      ],
      'full',
      T(3),
    );
    expect(counts).toMatchObject({ listed: 4, joined: 0, changed: 0, returned: 1, removed: 0, unchanged: 3 });
    expect(await history()).toEqual([
      ['E1', iso(1), iso(2), 'active', 'ann@example.com', { Department: 'Finance', Manager: 'E9' }],
      ['E1', iso(2), null, 'active', 'ann@example.com', { Department: 'Engineering', Manager: 'E9' }],
      ['E2', iso(1), null, 'active', 'bob@example.com', { Department: 'Sales', Manager: 'E9' }],
      ['E3', iso(1), iso(2), 'active', 'cy@example.com', { Department: 'Ops' }],
      ['E3', iso(3), null, 'active', 'cy@example.com', { Department: 'Ops', Manager: 'E4' }],
      ['E4', iso(2), null, 'active', 'di@example.com', { Department: 'Ops', Manager: 'E3' }],
    ]);
    const e3 = (await employees()).find((e) => e.employee_id === 'E3')!;
    expect(e3).toMatchObject({ removed_at: null, first_seen_at: T(1), last_seen_at: T(3), updated_at: T(3) });
  });

  it('answers "as of" questions from the history', async () => {
    const asOf = async (at: Date) => {
      const { rows } = await sql<{ employee_id: string; department: string }>`
        select employee_id, attributes->>'Department' as department from training.employee_history
        where valid_from <= ${at} and (valid_to is null or valid_to > ${at}) order by employee_id`.execute(t.db);
      return rows.map((r) => `${r.employee_id}:${r.department}`);
    };
    expect(await asOf(new Date(Date.UTC(2025, 0, 1, 12)))).toEqual(['E1:Finance', 'E2:Sales', 'E3:Ops']);
    expect(await asOf(new Date(Date.UTC(2025, 0, 2, 12)))).toEqual(['E1:Engineering', 'E2:Sales', 'E4:Ops']);
    expect(await asOf(new Date(Date.UTC(2025, 0, 3, 12)))).toEqual(['E1:Engineering', 'E2:Sales', 'E3:Ops', 'E4:Ops']);
  });

  it('a rejected row changes no employee, and a full feed does not take its employee for a leaver', async () => {
    const employeesBefore = await employees();
    const historyBefore = await history();
    const counts = await snapshot(
      [
        'E1,ann@example.com,Ann,Smith,on sabbatical,Research,E9', // bad status: the department change is not taken either
        'E2,bob@,Bob,Jones,active,Sales,E9', // bad e-mail; E2 must not be removed
        ',di@example.com,Di,Wu,active,Ops,E3', // no employee_id; E4 is protected by its e-mail
        'E3,cy@example.com,Cy,Lee,active,Ops,E4',
      ],
      'full',
      T(4),
    );
    expect(counts).toMatchObject({ listed: 1, joined: 0, changed: 0, returned: 0, removed: 0, unchanged: 1 });
    expect(await history()).toEqual(historyBefore);
    const after = await employees();
    // Only E3's last_seen_at moved.
    expect(after).toEqual(employeesBefore.map((e) => (e.employee_id === 'E3' ? { ...e, last_seen_at: T(4) } : e)));
  });

  it('a delta feed touches only the employees it lists', async () => {
    const before = await employees();
    const counts = await snapshot(['E2,bob@example.com,Bob,Jones,leaver,Sales,E9', 'E5,eve@example.com,Eve,Ng,active,Legal,E1'], 'delta', T(5));
    expect(counts).toMatchObject({ listed: 2, joined: 1, changed: 1, returned: 0, removed: 0, unchanged: 0 });
    const after = await employees();
    expect(after.filter((e) => !['E2', 'E5'].includes(e.employee_id))).toEqual(before.filter((e) => e.employee_id !== 'E2'));
    expect(after.find((e) => e.employee_id === 'E2')).toMatchObject({ status: 'inactive', removed_at: null, updated_at: T(5) });
    expect(after.find((e) => e.employee_id === 'E5')).toMatchObject({ status: 'active', first_seen_at: T(5) });
    const h = await history();
    expect(h.filter(([id]) => id === 'E2')).toEqual([
      ['E2', iso(1), iso(5), 'active', 'bob@example.com', { Department: 'Sales', Manager: 'E9' }],
      ['E2', iso(5), null, 'inactive', 'bob@example.com', { Department: 'Sales', Manager: 'E9' }],
    ]);
    expect(h.filter(([, , validTo]) => validTo === null).map(([id]) => id)).toEqual(['E1', 'E2', 'E3', 'E4', 'E5']);
  });

  it('an unreadable feed changes nothing at all', async () => {
    const before = await employees();
    const file = path.join(dir, 'broken.csv');
    await writeFile(file, 'id,mail\nE1,a@example.com\n');
    const feed = await readFeed(file);
    await expect(snapshotFeed(t.scope(), feed, { mode: 'full', at: T(6) })).rejects.toThrow(UnreadableFeedError);
    expect(await employees()).toEqual(before);
  });

  it('takes the platform account from trainsync.identities, else from the feed', async () => {
    const known = '11111111-1111-4111-8111-111111111111';
    const fromFeed = '22222222-2222-4222-8222-222222222222';
    await t.db.insertInto('trainsync.identities').values({ org: 'default', employee_id: 'E1', email: 'ann@example.com', platform_user_id: known, active: true }).execute();
    const file = path.join(dir, 'accounts.csv');
    await writeFile(file, `employee_id,email,platform_user_id\nE1,ann@example.com,\nE6,fay@example.com,${fromFeed}\n`);
    const counts = await snapshotFeed(t.scope(), await readFeed(file), { mode: 'delta', at: T(7) });
    // E1 lost its names and attributes in this feed: a change; the account alone would not be one.
    expect(counts).toMatchObject({ joined: 1, changed: 1 });
    const rows = await employees();
    expect(rows.find((e) => e.employee_id === 'E1')!.user_id).toBe(known);
    expect(rows.find((e) => e.employee_id === 'E6')!.user_id).toBe(fromFeed);
  });

  it('trainsync_reader can read both tables', async () => {
    const counts = await t.withPgClient(async (client) => {
      await client.query('begin');
      try {
        await client.query('set local role trainsync_reader');
        const { rows } = await client.query<{ e: number; h: number }>(
          'select (select count(*) from training.employees)::int as e, (select count(*) from training.employee_history)::int as h',
        );
        return rows[0]!;
      } finally {
        await client.query('rollback');
      }
    });
    expect(counts.e).toBeGreaterThan(0);
    expect(counts.h).toBeGreaterThan(counts.e);
  });
});

describe('trainsync load-feed', () => {
  it('snapshots a profiled export with no platform settings, and exits 2 on an unreadable file', async () => {
    const env = { DATABASE_URL: t.url, TRAINSYNC_OWNER_DATABASE_URL: t.ownerUrl, REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'warn' };
    const run = await runCli(['load-feed', 'examples/semicolon-export.csv', '--profile', 'examples/semicolon-profile.json'], env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // A full feed: E1…E6 of the tests above are not in it, so they are removed.
    expect(run.stdout).toContain('employees: 12 listed: 12 joined, 0 changed, 0 returned, 6 removed, 0 unchanged (full feed)');
    const p2003 = await t.db.selectFrom('training.employees').selectAll().where('employee_id', '=', 'P2003').executeTakeFirstOrThrow();
    expect(p2003).toMatchObject({ status: 'inactive', attributes: { department: 'Logistiek', manager: 'P2010', end_date: '31-1-2024' } });

    const broken = path.join(dir, 'broken-cli.csv');
    await writeFile(broken, 'id;mail\nP2001;a@example.com\n');
    const bad = await runCli(['load-feed', broken], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no employee was changed');
    expect(await t.db.selectFrom('training.employees').select('employee_id').where('removed_at', 'is', null).where('employee_id', 'like', 'P%').execute()).toHaveLength(12);
  });
});

describe('provision snapshots the feed it applies', () => {
  let h: SyncHarness;
  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { seed: 21, sizes: { users: 12, groups: 2, courses: 2, results: 5 } } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('not on a dry run; on an applied run, with the account of a joiner created by that run', async () => {
    const rows = rowsFromState(h.sim.state);
    const joiner = { employee_id: 'J900', email: `j900.joiner${ORG_EMAIL_DOMAIN}`, first_name: 'Jo', last_name: 'Joiner', status: 'active', groups: [], role: 'USER', organisation_identifier: 'J900' };
    const file = path.join(dir, 'provision.csv');
    await writeFile(file, toCsv([...rows, joiner]));
    const count = async (): Promise<number> =>
      Number((await owner(h.app).db.selectFrom('training.employees').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

    const dry = await provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'full', dryRun: true, force: false });
    expect(dry.employees).toBeUndefined();
    expect(await count()).toBe(0);

    const applied = await provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'full', dryRun: false, force: false });
    expect(applied.employeesError).toBeUndefined();
    expect(applied.employees).toMatchObject({ listed: rows.length + 1, joined: rows.length + 1, removed: 0 });
    expect(await count()).toBe(rows.length + 1);
    const created = findUser(h.sim.state, joiner.email)!;
    const stored = await owner(h.app).db.selectFrom('training.employees').selectAll().where('employee_id', '=', 'J900').executeTakeFirstOrThrow();
    expect(stored.user_id).toBe(created.id);
  });

  it('reads the feed through a profile: a status word of the export disables the employee and is stored as inactive', async () => {
    const rows = [...rowsFromState(h.sim.state)];
    const target = rows.find((r) => r.status === 'active')!;
    target.status = 'Long-term leave';
    const file = path.join(dir, 'provision-profile.csv');
    await writeFile(file, toCsv(rows));
    const reading = feedReadOptions(parseFeedProfile('{"statusMap": {"long-term leave": "inactive"}}', 'p.json'));
    const result = await provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'delta', dryRun: false, force: false, reading });
    expect(result.feed.errors).toEqual([]);
    expect(result.plan.actions.map((a) => `${a.kind}:${a.employeeId}`)).toEqual([`disable:${target.employee_id}`]);
    expect(result.employees).toMatchObject({ changed: 1 });
    const stored = await owner(h.app).db.selectFrom('training.employees').selectAll().where('employee_id', '=', target.employee_id).executeTakeFirstOrThrow();
    expect(stored.status).toBe('inactive');
  });
});
