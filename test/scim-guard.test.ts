import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUser, ORG_EMAIL_DOMAIN, writeCallCount } from '../src/simulator/index.ts';
import { runCli } from './helpers/cli.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * The deactivation guard: past the feed's disable threshold (default the larger of 5 and
 * 10% of the active employees) within a sliding hour, SCIM deactivations are held; the
 * rest of the burst is applied. `status` lists the held ones; `trainsync scim held`
 * releases or drops them.
 */

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const COUNT = 8;
const LIMIT = 5;
let h: ScimHarness;

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 24 } });
});
afterAll(async () => {
  await h?.close();
});

const email = (i: number) => `guard${i}${ORG_EMAIL_DOMAIN}`;
const deactivate = { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] };

describe('SCIM deactivation guard', () => {
  const ids: string[] = [];

  it(`holds a burst of ${COUNT} deactivations past the limit of ${LIMIT}, applies the first ${LIMIT}`, async () => {
    const created = await Promise.all(
      Array.from({ length: COUNT }, (_, i) => h.request('POST', '/Users', { schemas: [USER], userName: email(i), externalId: `G${i}`, name: { givenName: 'Guard', familyName: `No ${i}` } })),
    );
    expect(created.map((c) => c.status)).toEqual(Array(COUNT).fill(201));
    ids.push(...created.map((c) => c.json.id as string));
    await h.settled();
    expect(Array.from({ length: COUNT }, (_, i) => findUser(h.sim.state, email(i))?.hasAccess)).toEqual(Array(COUNT).fill(true));
    // About one request per create: the ids are learned afterwards, by a paged pass when that is
    // cheaper than a lookup each (a create that ran alone, before the rest were queued, is looked up).
    const identities = await waitFor(async () => {
      const rows = await h.app.db.selectFrom('trainsync.identities').select(['email', 'platform_user_id']).execute();
      return rows.length === COUNT && rows.every((r) => r.platform_user_id !== null) ? rows : undefined;
    }, 10_000, 'the platform ids of the created accounts');
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
    const held = await h.app.db.selectFrom('trainsync.scim_held_actions').selectAll().where('status', '=', 'held').orderBy('id').execute();
    expect(held).toHaveLength(COUNT - LIMIT);
    for (const row of held) expect(findUser(h.sim.state, row.email)!.hasAccess).toBe(true);
    expect(held[0]!.reason).toMatch(/over the limit of 5/);
    const employees = await h.app.db.selectFrom('training.employees').select(['employee_id', 'status']).execute();
    expect(employees.every((e) => e.status === 'inactive')).toBe(true);
  });

  it('a retry of a held deactivation changes nothing: still held once, no platform write', async () => {
    const held = await h.app.db.selectFrom('trainsync.scim_held_actions').select(['scim_id']).where('status', '=', 'held').execute();
    const writes = writeCallCount(h.sim.requests);
    await Promise.all(held.map((r) => h.request('PATCH', `/Users/${r.scim_id}`, deactivate)));
    await h.settled();
    expect(writeCallCount(h.sim.requests)).toBe(writes);
    const again = await h.app.db.selectFrom('trainsync.scim_held_actions').select('id').execute();
    expect(again).toHaveLength(COUNT - LIMIT);
  });

  it('status lists the held ones; `scim held --release` applies one, `--drop` keeps the employee active', async () => {
    const status = await runCli(['status'], h.env);
    expect(status.stderr).toBe('');
    expect(status.stdout).toContain('SCIM deactivations held by the guard');
    const held = await h.app.db.selectFrom('trainsync.scim_held_actions').selectAll().where('status', '=', 'held').orderBy('id').execute();
    for (const row of held) expect(status.stdout).toContain(row.email);

    const list = await runCli(['scim', 'held'], h.env);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(held[0]!.employee_id);

    const released = await runCli(['scim', 'held', '--release', String(held[0]!.id)], h.env);
    expect(released).toMatchObject({ code: 0, stdout: expect.stringContaining('1 action(s) enqueued') });
    await h.settled();
    expect(findUser(h.sim.state, held[0]!.email)!.hasAccess).toBe(false);

    const dropped = await runCli(['scim', 'held', '--drop', String(held[1]!.id)], h.env);
    expect(dropped.code).toBe(0);
    await h.settled();
    expect(findUser(h.sim.state, held[1]!.email)!.hasAccess).toBe(true);
    const employee = await h.app.db.selectFrom('training.employees').selectAll().where('employee_id', '=', held[1]!.employee_id).executeTakeFirstOrThrow();
    expect(employee.status).toBe('active');
    expect((await h.request('GET', `/Users/${held[1]!.scim_id}`)).json.active).toBe(true);

    const unknown = await runCli(['scim', 'held', '--release', String(held[0]!.id)], h.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no held SCIM action/);
  });

  it('reactivating a user whose deactivation is held supersedes it', async () => {
    const [last] = await h.app.db.selectFrom('trainsync.scim_held_actions').selectAll().where('status', '=', 'held').execute();
    expect(last).toBeDefined();
    const on = await h.request('PATCH', `/Users/${last!.scim_id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] });
    expect(on.json.active).toBe(true);
    await h.settled();
    const row = await h.app.db.selectFrom('trainsync.scim_held_actions').selectAll().where('id', '=', last!.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('superseded');
    expect(findUser(h.sim.state, last!.email)!.hasAccess).toBe(true);
  });
});
