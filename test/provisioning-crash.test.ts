import { owner } from './helpers/owner.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionFeed, type ProvisionResult } from '../src/provisioning/provision-feed.ts';
import { findUser, groupMembers, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * A crash between a successful platform call and its record, made real: a trigger in
 * this test's database fails the first "succeeded" update of an audit row, so the job's
 * transaction (identity + audit) rolls back after the platform has done the work, and
 * BullMQ retries the job.
 */
let h: SyncHarness;
let files: ReturnType<typeof feedDir>;

beforeAll(async () => {
  h = await createSyncHarness({ simulator: { seed: 3, sizes: { users: 12, groups: 2, courses: 3, results: 5 } } });
  files = feedDir();
  await sql`create sequence test_crash_once`.execute(owner(h.app).db);
  // The trigger runs as trainsync's role (trainsync_app), which must be able to draw from it.
  await sql`grant usage on sequence test_crash_once to trainsync_app`.execute(owner(h.app).db);
  await sql`
    create function test_crash() returns trigger language plpgsql as $$
    begin
      if new.status = 'succeeded' then
        if nextval('test_crash_once') = 1 then
          raise exception 'simulated crash after the platform call';
        end if;
      end if;
      return new;
    end $$`.execute(owner(h.app).db);
  await sql`create trigger test_crash before update on trainsync.provisioning_actions for each row execute function test_crash()`.execute(owner(h.app).db);
});
afterAll(async () => {
  await h?.close();
  files?.cleanup();
});

function run(rows: readonly HrRow[]): Promise<ProvisionResult> {
  const file = files.write(`feed-${Math.random().toString(36).slice(2)}.csv`, toCsv(rows));
  return provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'delta', dryRun: false, force: false });
}

const routeCalls = (route: string): number[] => h.sim.requests.filter((r) => r.route === route).map((r) => r.status);

describe('a crash between the platform call and its audit record', () => {
  it('create-user: the retry finds the account (EMAIL_IN_USE_ORG_CONNECTED), adopts it, and records it once', async () => {
    const group = h.sim.state.groups[1]!.id;
    const email = `casey.crash${ORG_EMAIL_DOMAIN}`;
    h.sim.resetRequests();
    const result = await run([{ employee_id: 'C1', email, first_name: 'Casey', last_name: 'Crash', status: 'active', groups: [group], role: 'USER', organisation_identifier: 'C1' }]);
    expect(result.applied!.audit.map((r) => [r.kind, r.status, r.attempts])).toEqual([['create-user', 'succeeded', 2], ['add-to-group', 'succeeded', 1]]);
    expect(routeCalls('POST /api/v2/users')).toEqual([204, 400]);
    const accounts = h.sim.state.users.filter((u) => u.email === email);
    expect(accounts).toHaveLength(1);
    expect(groupMembers(h.sim.state, group)).toContain(accounts[0]!.id);
    const identity = await owner(h.app).db.selectFrom('trainsync.identities').selectAll().where('employee_id', '=', 'C1').executeTakeFirstOrThrow();
    expect(identity).toMatchObject({ platform_user_id: accounts[0]!.id, active: true, groups: [group] });
    const audit = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').select(['after', 'error_code']).where('action_id', '=', `create-user:${email}`).executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ after: expect.objectContaining({ adopted: true, platformUserId: accounts[0]!.id }), error_code: null });
  });

  it('disable: the retry repeats an idempotent call and records it once', async () => {
    // First provision everyone (adoption), then crash on the leaver's record.
    const rows = rowsFromState(h.sim.state).filter((r) => r.employee_id !== 'C1');
    await run(rows);
    await sql`select setval('test_crash_once', 1, false)`.execute(owner(h.app).db);
    const leaver = rows.find((r) => r.status === 'active')!;
    h.sim.resetRequests();
    const result = await run([{ ...leaver, status: 'terminated' }]);
    expect(result.applied!.audit.map((r) => [r.kind, r.status, r.attempts])).toEqual([['disable', 'succeeded', 2]]);
    expect(routeCalls('PATCH /api/v2/users/{userId}/disable')).toEqual([204, 204]);
    expect(findUser(h.sim.state, leaver.email)!.hasAccess).toBe(false);
    const identity = await owner(h.app).db.selectFrom('trainsync.identities').select(['active', 'version']).where('employee_id', '=', leaver.employee_id).executeTakeFirstOrThrow();
    expect(identity).toMatchObject({ active: false });
    // And nothing is left to do.
    h.sim.resetRequests();
    const again = await run([{ ...leaver, status: 'terminated' }]);
    expect(again.plan.actions.toArray()).toEqual([]);
    expect(h.sim.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });
});
