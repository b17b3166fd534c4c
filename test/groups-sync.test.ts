import { owner } from './helpers/owner.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { createJobCatalog } from '../src/queue/catalog.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { scheduleTable } from '../src/queue/schedulers.ts';
import { addGroup, findUser, groupMembers, ORG_EMAIL_DOMAIN, PAGE_SIZE, removeGroup, updateCourse, updateGroup, type SimulatorState } from '../src/simulator/index.ts';
import { syncJobName, syncResources } from '../src/sync/catalog-resources.ts';
import { feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import type pg from 'pg';

interface ComparableGroup {
  id: string;
  name: string;
  courses: Array<{ id: string; name: string }>;
}

/** What GET groups shows, as the warehouse should hold it (course names as the listing gives them). */
function simulatorGroups(state: SimulatorState): ComparableGroup[] {
  const names = new Map(state.courses.map((c) => [c.id, c.name]));
  return state.groups
    .map((g) => ({
      id: g.id,
      name: g.name,
      courses: g.courses.map((c) => ({ id: c.id, name: names.get(c.id) ?? c.name })).sort((a, b) => a.id.localeCompare(b.id)),
    }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

async function warehouseGroups(pool: pg.Pool): Promise<ComparableGroup[]> {
  const { rows } = await pool.query<ComparableGroup>(
    `select g.group_id::text as id, g.name,
            coalesce(jsonb_agg(jsonb_build_object('id', gc.course_id, 'name', gc.course_name) order by gc.course_id)
                     filter (where gc.course_id is not null), '[]') as courses
       from training.groups g left join training.group_courses gc using (org, group_id)
      where g.org = 'default' and g.removed_at is null
      group by g.org, g.group_id
      order by g.group_id::text`,
  );
  return rows;
}

describe('sync groups: the warehouse equals GET groups', () => {
  let h: SyncHarness;

  beforeAll(async () => {
    // More groups than one page holds, so the listing is paged.
    h = await createSyncHarness({ simulator: { seed: 3, sizes: { groups: PAGE_SIZE + 12, courses: 12, users: 30, results: 10 } } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is part of `sync all` (after filters, before users) and of the nightly schedule', () => {
    // The order of these among every resource (a resource added later may come anywhere after its parent).
    const known = ['courses', 'filters', 'groups', 'users', 'results', 'seats'];
    const order = syncResources(allJobs);
    expect(order.filter((r) => known.includes(r))).toEqual(known);
    expect(syncJobName(allJobs, 'groups')).toBe('sync-groups');
    const catalog = createJobCatalog(allJobs);
    expect(scheduleTable(catalog, loadConfig({}))).toContainEqual(expect.objectContaining({ job: 'sync-groups', queue: 'sync', pattern: '0 2 * * *' }));
    expect(scheduleTable(catalog, loadConfig({ TRAINSYNC_CRON_GROUPS: '30 3 * * *' }))).toContainEqual(expect.objectContaining({ job: 'sync-groups', queue: 'sync', pattern: '30 3 * * *' }));
  });

  it('a first sync reads every page and stores every group with its courses', async () => {
    const outcomes = await h.sync(['groups']);
    const summary = summaryOf(outcomes, 'groups');
    expect(summary).toMatchObject({ inserted: PAGE_SIZE + 12, updated: 0, removed: 0, pages: 2 });
    const pages = h.sim.requests.filter((r) => r.path === '/api/v2/groups').map((r) => new URLSearchParams(r.query).get('page'));
    expect(pages).toEqual(['1', '2']);
    const expected = simulatorGroups(h.sim.state);
    expect(expected.some((g) => g.courses.length > 1)).toBe(true);
    expect(await warehouseGroups(h.database.pool)).toEqual(expected);

    const again = summaryOf(await h.sync(['groups']), 'groups');
    expect(again).toMatchObject({ inserted: 0, updated: 0, removed: 0, unchanged: PAGE_SIZE + 12 });
  });

  it('marks a removed group, replaces changed courses, follows a renamed course, and clears removed_at when a group returns', async () => {
    const state = h.sim.state;
    const [gone, renamed, recoursed] = state.groups;
    const goneCopy = { id: gone!.id, name: gone!.name, courses: gone!.courses.map((c) => ({ ...c })) };
    removeGroup(state, gone!.id);
    updateGroup(state, renamed!.id, { name: `${renamed!.name} (EMEA)` });
    updateGroup(state, recoursed!.id, { courses: [state.courses[7]!, state.courses[8]!] });
    const touched = state.courses[7]!;
    const holders = state.groups.filter((g) => g.courses.some((c) => c.id === touched.id)).length;
    updateCourse(state, touched.id, { name: `${touched.name} v2` });

    const summary = summaryOf(await h.sync(['groups']), 'groups');
    // renamed + recoursed, and every other group that lists the renamed course.
    const otherHolders = state.groups.filter((g) => g.id !== renamed!.id && g.id !== recoursed!.id && g.courses.some((c) => c.id === touched.id)).length;
    expect(holders).toBeGreaterThanOrEqual(1);
    expect(summary).toMatchObject({ inserted: 0, removed: 1, updated: 2 + otherHolders });
    expect(await warehouseGroups(h.database.pool)).toEqual(simulatorGroups(state));

    const pool = h.database.pool;
    const removed = await pool.query('select removed_at, name from training.groups where group_id = $1', [gone!.id]);
    expect(removed.rows[0]?.removed_at).toBeInstanceOf(Date);
    expect(removed.rows[0]?.name).toBe(gone!.name);
    const kept = await pool.query('select count(*)::int as n from training.group_courses where group_id = $1', [gone!.id]);
    expect(kept.rows[0]?.n).toBe(new Set(goneCopy.courses.map((c) => c.id)).size);

    addGroup(state, goneCopy);
    expect(summaryOf(await h.sync(['groups']), 'groups')).toMatchObject({ updated: 1, removed: 0, inserted: 0 });
    const back = await pool.query('select removed_at from training.groups where group_id = $1', [gone!.id]);
    expect(back.rows[0]?.removed_at).toBeNull();
  });

  it('the run is recorded like any snapshot', async () => {
    const run = await owner(h.app).db.selectFrom('trainsync.runs').selectAll().where('resource', '=', 'groups').orderBy('id', 'desc').executeTakeFirstOrThrow();
    expect(run).toMatchObject({ status: 'succeeded', mode: 'snapshot', note: null });
  });
});

describe('sync groups on a platform without GET groups', () => {
  let h: SyncHarness;

  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { seed: 4, groupsEndpoint: false, sizes: { groups: 3, courses: 5, users: 10, results: 5 } } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('records "not available" and succeeds, storing nothing', async () => {
    const outcomes = await h.sync(['courses', 'groups']);
    expect(outcomes.map((o) => [o.name, o.status])).toEqual([
      ['sync-courses', 'completed'],
      ['sync-groups', 'completed'],
    ]);
    expect(h.sim.requests.filter((r) => r.path === '/api/v2/groups').map((r) => r.status)).toEqual([404]);
    const run = await owner(h.app).db.selectFrom('trainsync.runs').selectAll().where('resource', '=', 'groups').executeTakeFirstOrThrow();
    expect(run.status).toBe('succeeded');
    expect(run.note).toBe('not available (GET groups answered 404)');
    const n = await h.database.pool.query('select (select count(*) from training.groups)::int as g, (select count(*) from training.group_courses)::int as c');
    expect(n.rows[0]).toEqual({ g: 0, c: 0 });
  });
});

describe('group memberships trainsync applies', () => {
  let h: SyncHarness;
  let files: ReturnType<typeof feedDir>;

  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { seed: 12, sizes: { users: 12, groups: 3, courses: 4, results: 5 } } });
    files = feedDir();
  });
  afterAll(async () => {
    await h?.close();
    files?.cleanup();
  });

  const run = (rows: readonly HrRow[]) =>
    provisionFeed(provisionDeps(h.app, 'default'), { file: files.write(`feed-${Math.random().toString(36).slice(2)}.csv`, toCsv(rows)), mode: 'full', dryRun: false, force: false });

  const members = async (employeeId: string) =>
    (
      await h.database.pool.query<{ group_id: string; user_id: string; since: Date; removed_at: Date | null }>(
        'select group_id, user_id, since, removed_at from training.group_members where employee_id = $1 order by group_id',
        [employeeId],
      )
    ).rows;

  it('records adds and removals in training.group_members, as the platform holds them', async () => {
    const state = h.sim.state;
    const [g0, g1, g2] = state.groups;
    const rows = rowsFromState(state);
    const joiner: HrRow = { employee_id: 'J100', email: `j100.joiner${ORG_EMAIL_DOMAIN}`, first_name: 'Jo', last_name: 'Joiner', status: 'active', groups: [g0!.id, g1!.id], role: 'USER', organisation_identifier: 'J100' };
    const first = await run([...rows, joiner]);
    expect(first.applied?.audit.every((a) => a.status === 'succeeded')).toBe(true);
    const userId = findUser(state, joiner.email)!.id;
    const added = await members('J100');
    expect(added.map((m) => [m.group_id, m.user_id, m.removed_at])).toEqual(
      [g0!.id, g1!.id].sort().map((g) => [g, userId, null]),
    );
    // Every membership the feed lists for an adopted employee is applied once, so recorded too.
    const listed = rows.flatMap((r) => r.groups.map((g) => `${g}/${findUser(state, r.email)!.id}`)).sort();
    const recorded = await h.database.pool.query<{ k: string }>(
      "select group_id || '/' || user_id as k from training.group_members where removed_at is null and employee_id <> 'J100' order by 1",
    );
    expect(recorded.rows.map((r) => r.k)).toEqual(listed);

    // A move: out of g0, into g2. The g1 membership keeps its start.
    const moved = await run([...rows, { ...joiner, groups: [g1!.id, g2!.id] }]);
    expect(moved.plan.counts).toMatchObject({ 'add-to-group': 1, 'remove-from-group': 1 });
    const after = new Map((await members('J100')).map((m) => [m.group_id, m]));
    expect(after.get(g0!.id)?.removed_at).toBeInstanceOf(Date);
    expect(after.get(g1!.id)?.removed_at).toBeNull();
    expect(after.get(g1!.id)?.since).toEqual(added.find((m) => m.group_id === g1!.id)!.since);
    expect(after.get(g2!.id)?.removed_at).toBeNull();
    expect(groupMembers(state, g0!.id)).not.toContain(userId);
    expect(groupMembers(state, g2!.id)).toContain(userId);

    // Back into g0: the same row, removed_at cleared, a new start.
    await run([...rows, { ...joiner, groups: [g0!.id, g1!.id, g2!.id] }]);
    const back = (await members('J100')).find((m) => m.group_id === g0!.id)!;
    expect(back.removed_at).toBeNull();
    expect(back.since.getTime()).toBeGreaterThan(added.find((m) => m.group_id === g0!.id)!.since.getTime());
  });
});
