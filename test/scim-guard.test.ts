import { owner } from './helpers/owner.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { getHeldPlan, listHeldPlans, type HeldPlan } from '../src/provisioning/held-plans.ts';
import { findUser, ORG_EMAIL_DOMAIN, writeCallCount } from '../src/simulator/index.ts';
import { runCli, stderrSaid } from './helpers/cli.ts';
import { consoleSession, visible, type ConsoleSession } from './helpers/console-http.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * The deactivation guard: past the feed's disable threshold (default the larger of 5 and
 * 10% of the active employees) within a sliding hour, SCIM deactivations are held; the
 * rest of the burst is applied. The held ones are one held plan (source `scim`), listed by
 * `trainsync held`, `status` and the console like any other; approving it (with the count
 * of people who lose access) applies it once; rejecting keeps them active.
 */

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const COUNT = 8;
const LIMIT = 5;
const OPERATOR = { name: 'olga', password: 'operator-pass-1234' };
let h: ScimHarness;
let server: ConsoleServer;
let operator: ConsoleSession;

beforeAll(async () => {
  const hash = await hashConsolePassword(OPERATOR.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createScimHarness({ simulator: { seed: 24 }, env: { TRAINSYNC_CONSOLE_USERS: `${OPERATOR.name}:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0' } });
  server = (await startConsole({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: (org) => provisionDeps(h.app, org) }))!;
  operator = await consoleSession(`http://127.0.0.1:${server.port}`, OPERATOR);
});
afterAll(async () => {
  await server?.close();
  await h?.close();
});

const email = (i: number) => `guard${i}${ORG_EMAIL_DOMAIN}`;
const deactivate = { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] };
const reactivate = { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] };
const create = (i: number) => ({ schemas: [USER, ENTERPRISE], userName: email(i), externalId: `G${i}`, name: { givenName: 'Guard', familyName: `No ${i}` }, [ENTERPRISE]: { department: `Dept ${i % 2}` } });

/** The organisation's open held plans, in full. */
async function openPlans(): Promise<HeldPlan[]> {
  const plans = await listHeldPlans(owner(h.app).scope('default'), { onlyHeld: true });
  return Promise.all(plans.map(async (p) => (await getHeldPlan(owner(h.app).db, p.id))!));
}

describe('SCIM deactivation guard', () => {
  const ids: string[] = [];

  it(`holds a burst of ${COUNT} deactivations past the limit of ${LIMIT} as one held plan, applies the first ${LIMIT}`, async () => {
    const created = await Promise.all(Array.from({ length: COUNT }, (_, i) => h.request('POST', '/Users', create(i))));
    expect(created.map((c) => c.status)).toEqual(Array(COUNT).fill(201));
    ids.push(...created.map((c) => c.json.id as string));
    await h.settled();
    expect(Array.from({ length: COUNT }, (_, i) => findUser(h.sim.state, email(i))?.hasAccess)).toEqual(Array(COUNT).fill(true));
    // About one request per create: the ids are learned afterwards, by a paged pass when that is
    // cheaper than a lookup each (a create that ran alone, before the rest were queued, is looked up).
    // A generous deadline, polled on state: the resolve pass runs on the sweep's clock, late under a CPU hog.
    const identities = await waitFor(async () => {
      const rows = await owner(h.app).db.selectFrom('trainsync.identities').select(['email', 'platform_user_id']).execute();
      return rows.length === COUNT && rows.every((r) => r.platform_user_id !== null) ? rows : undefined;
    }, 60_000, 'the platform ids of the created accounts');
    for (const row of identities) expect(row.platform_user_id).toBe(findUser(h.sim.state, row.email)!.id);
    const users = h.sim.requests.filter((r) => r.route === 'GET /api/v2/users');
    expect(users.length).toBeLessThan(COUNT);
    expect(users.some((r) => !r.query.includes('email='))).toBe(true);
    expect(h.sim.requests.filter((r) => r.route === 'POST /api/v2/users')).toHaveLength(COUNT);

    const answers = await Promise.all(ids.map((id) => h.request('PATCH', `/Users/${id}`, deactivate)));
    // Every answer states the intended state, held or not.
    expect(answers.map((a) => [a.status, a.json.active])).toEqual(Array(COUNT).fill([200, false]));
    await h.settled();
    const withAccess = Array.from({ length: COUNT }, (_, i) => findUser(h.sim.state, email(i))!.hasAccess);
    expect(withAccess.filter((a) => !a)).toHaveLength(LIMIT);
    // However the burst was batched: one held plan, SCIM's, holding the rest.
    const [plan, ...others] = await openPlans();
    expect(others).toEqual([]);
    expect(plan).toMatchObject({ source: 'scim', file: 'SCIM', status: 'held', disables: COUNT - LIMIT, activeEmployees: expect.any(Number) });
    expect(plan!.message).toMatch(/over the limit of 5/);
    expect(plan!.people).toHaveLength(COUNT - LIMIT);
    for (const person of plan!.people) {
      expect(person.kinds).toEqual(['disable']);
      expect(person.department).toMatch(/^Dept [01]$/);
      expect(findUser(h.sim.state, person.email)!.hasAccess).toBe(true);
    }
    expect(plan!.actions.map((a) => a.kind)).toEqual(Array(COUNT - LIMIT).fill('disable'));
    const employees = await owner(h.app).db.selectFrom('training.employees').select(['employee_id', 'status']).execute();
    expect(employees.every((e) => e.status === 'inactive')).toBe(true);
    // The applied ones say where they came from, and why.
    const audit = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').select(['source', 'reason', 'feed_hash']).where('kind', '=', 'disable').execute();
    expect(audit).toHaveLength(LIMIT);
    for (const row of audit) expect(row).toEqual({ source: 'scim', reason: expect.stringMatching(/^SCIM User G\d: status inactive$/), feed_hash: 'via SCIM' });
  });

  it('a retry of a held deactivation changes nothing: still held once, no platform write', async () => {
    const [plan] = await openPlans();
    const writes = writeCallCount(h.sim.requests);
    await Promise.all(plan!.people.map((p) => h.request('PATCH', `/Users/${p.ref!}`, deactivate)));
    await h.settled();
    expect(writeCallCount(h.sim.requests)).toBe(writes);
    const again = await openPlans();
    expect(again.map((p) => [p.id, p.people.length])).toEqual([[plan!.id, COUNT - LIMIT]]);
  });

  it('`trainsync held`, `scim held` (its alias), status and the console show it; approving needs the count, applies it once', async () => {
    const [plan] = await openPlans();
    const id = plan!.id;
    const status = await runCli(['status'], h.env);
    expect(status.stderr).toBe('');
    expect(status.stdout).toContain('Held plans: 1 (review, approve or reject: trainsync held)');

    const list = await runCli(['held'], h.env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`#${id}[\\s│]+scim[\\s│]+SCIM[\\s│]+${COUNT - LIMIT}[\\s│]`));
    expect(list.stdout).toContain(`#${id}: ${plan!.message}`);
    // On a 100-column terminal (COLUMNS) every line fits, the why and the commands included.
    const narrow = await runCli(['held'], { ...h.env, COLUMNS: '100' });
    for (const line of narrow.stdout.split('\n')) expect([...line].length, line).toBeLessThanOrEqual(100);
    expect(narrow.stdout).toContain('trainsync held --approve ID --confirm N');
    const alias = await runCli(['scim', 'held'], h.env);
    expect(alias).toMatchObject({ code: 0, stdout: list.stdout });
    expect(alias.stderr).toContain('`trainsync scim held` is now `trainsync held`');

    const page = await operator.get(`/provisioning/held/${id}`);
    expect(page.status).toBe(200);
    expect(visible(page.text)).toContain(`Held by the disable limit: ${COUNT - LIMIT} people would lose access.`);
    for (const person of plan!.people) expect(page.text).toContain(person.email);
    expect(page.text).toContain('<input name="confirm" id="confirm"');
    expect((await operator.get('/provisioning')).text).toContain(`href="/provisioning/held/${id}"`);

    // Without --confirm, or with another number: refused, naming the flag; nothing changes.
    const writes = writeCallCount(h.sim.requests);
    const bare = await runCli(['held', '--approve', String(id)], h.env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/give --confirm N, the number of people who will lose access/);
    const wrong = await runCli(['held', '--approve', String(id), '--confirm', String(COUNT)], h.env);
    expect(wrong.code).toBe(2);
    expect(stderrSaid(wrong.stderr)).toMatch(new RegExp(`"${COUNT}" is not the number of people plan #${id} takes access away from: give --confirm N`));
    expect(writeCallCount(h.sim.requests)).toBe(writes);
    expect((await getHeldPlan(owner(h.app).db, id))!.status).toBe('held');

    const approved = await runCli(['held', '--approve', String(id), '--confirm', String(COUNT - LIMIT)], h.env);
    expect(approved).toMatchObject({ code: 0, stdout: expect.stringContaining(`approved plan #${id}: ${COUNT - LIMIT} actions enqueued`) });
    await h.settled();
    for (const person of plan!.people) expect(findUser(h.sim.state, person.email)!.hasAccess).toBe(false);
    expect(await getHeldPlan(owner(h.app).db, id)).toMatchObject({ status: 'approved', decidedRole: 'cli', decidedBy: expect.any(String) });
    const applied = writeCallCount(h.sim.requests);
    expect(applied - writes).toBe(COUNT - LIMIT);

    // Once: a second approval is refused and writes nothing.
    const twice = await runCli(['held', '--approve', String(id), '--confirm', String(COUNT - LIMIT)], h.env);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/approved, not held/);
    await h.settled();
    expect(writeCallCount(h.sim.requests)).toBe(applied);
    expect(await openPlans()).toEqual([]);
  });

  it('reactivating a held user takes them out of the hold; rejecting keeps the rest active', async () => {
    // The hour's allowance is spent: the next deactivations are held.
    const more = await Promise.all([COUNT, COUNT + 1].map((i) => h.request('POST', '/Users', create(i))));
    await h.settled();
    await Promise.all(more.map((c) => h.request('PATCH', `/Users/${c.json.id as string}`, deactivate)));
    await h.settled();
    const [plan] = await openPlans();
    expect(plan!.people.map((p) => p.email).sort()).toEqual([email(COUNT), email(COUNT + 1)]);

    expect((await h.request('PATCH', `/Users/${more[0]!.json.id as string}`, reactivate)).json.active).toBe(true);
    await h.settled();
    const [left] = await openPlans();
    expect(left).toMatchObject({ id: plan!.id, disables: 1 });
    expect(left!.people.map((p) => p.email)).toEqual([email(COUNT + 1)]);
    expect(findUser(h.sim.state, email(COUNT))!.hasAccess).toBe(true);

    const rejected = await runCli(['scim', 'held', '--drop', String(plan!.id)], h.env);
    expect(rejected.code).toBe(0);
    await h.settled();
    expect(findUser(h.sim.state, email(COUNT + 1))!.hasAccess).toBe(true);
    const employee = await owner(h.app).db.selectFrom('training.employees').selectAll().where('email', '=', email(COUNT + 1)).executeTakeFirstOrThrow();
    expect(employee.status).toBe('active');
    expect((await h.request('GET', `/Users/${more[1]!.json.id as string}`)).json.active).toBe(true);
    expect(await getHeldPlan(owner(h.app).db, plan!.id)).toMatchObject({ status: 'rejected', decidedRole: 'cli' });
  });
});
