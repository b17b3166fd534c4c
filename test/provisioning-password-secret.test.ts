import { owner } from './helpers/owner.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopedApp } from '../src/commands/options/scoped.ts';
import { jobIdForAction } from '../src/provisioning/apply/actions.ts';
import { waitForActions } from '../src/provisioning/apply/enqueue.ts';
import { PASSWORD_SECRET_TTL_SECONDS } from '../src/provisioning/apply/password-secret.ts';
import { queuePasswordChange } from '../src/provisioning/apply/password-request.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { userAccount } from '../src/simulator/index.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * A queued password change keeps its password out of the job's data (what bull-board
 * shows every console viewer, and BullMQ keeps for days): the data names the action;
 * the password is kept encrypted in Redis under the action's own key, with a TTL, and
 * deleted once used or failed for good. A job retried after a crash still finds it.
 */

let h: SyncHarness;

beforeAll(async () => {
  h = await createSyncHarness({
    simulator: { seed: 21, sizes: { users: 30, groups: 2, courses: 3, results: 5 } },
    env: { TRAINSYNC_SECRET_KEY: randomBytes(32).toString('hex') },
  });
  // A crash after the platform call, before the audit row says so: the first set-password's "succeeded" update fails once.
  await sql`create sequence test_password_crash_once`.execute(owner(h.app).db);
  await sql`grant usage on sequence test_password_crash_once to trainsync_app`.execute(owner(h.app).db);
  await sql`
    create function test_password_crash() returns trigger language plpgsql as $$
    begin
      if new.status = 'succeeded' and new.kind = 'set-password' and new.email like 'crash-%' then
        if nextval('test_password_crash_once') = 1 then
          raise exception 'simulated crash after the platform call';
        end if;
      end if;
      return new;
    end $$`.execute(owner(h.app).db);
  await sql`create trigger test_password_crash before update on trainsync.provisioning_actions for each row execute function test_password_crash()`.execute(owner(h.app).db);
});
afterAll(async () => {
  await h?.close();
});

const deps = () => ({ ...scopedApp(h.app, DEFAULT_ORG), config: h.config });
const apiUsers = () => h.sim.state.users.filter((u) => u.accountType === 'API');

async function jobDataOf(actionId: string): Promise<unknown> {
  const job = await h.app.queue.queues[PROVISION_QUEUE].getJob(jobIdForAction(h.app.scopes.scope(DEFAULT_ORG), actionId));
  return job?.data;
}

describe('a queued password change', () => {
  it('holds no password in its job data, not even encrypted; the encrypted copy has a key of its own with a TTL, deleted once used', async () => {
    const target = apiUsers()[0]!;
    const password = `Pw-${randomUUID()}-1`;
    const actionId = await queuePasswordChange(deps(), { email: target.email, password });
    const data = await jobDataOf(actionId);
    expect(data).toEqual({ actionId, email: target.email.toLowerCase(), org: DEFAULT_ORG });
    expect(JSON.stringify(data)).not.toMatch(/v1\./);
    const kept = await h.app.queue.secrets.get(h.app.scopes.scope(DEFAULT_ORG), actionId);
    expect(kept).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(kept).not.toContain(password);
    const ttl = await h.app.queue.secrets.ttl(h.app.scopes.scope(DEFAULT_ORG), actionId);
    expect(ttl).toBeGreaterThan(PASSWORD_SECRET_TTL_SECONDS - 600);
    expect(ttl).toBeLessThanOrEqual(PASSWORD_SECRET_TTL_SECONDS);
    const [row] = await waitForActions(deps(), [actionId]);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(userAccount(h.sim.state, target.id).passwordChanges).toBe(1);
    expect(await h.app.queue.secrets.get(h.app.scopes.scope(DEFAULT_ORG), actionId)).toBeUndefined();
  });

  it('a job retried after a crash (platform call made, record lost) still finds its password, then deletes it', async () => {
    const target = apiUsers()[1]!;
    const email = `crash-${target.email}`;
    // The simulator knows the account by its e-mail: rename it so the trigger picks this one.
    target.email = email;
    const actionId = await queuePasswordChange(deps(), { email, password: `Pw-${randomUUID()}-2` });
    const [row] = await waitForActions(deps(), [actionId]);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(userAccount(h.sim.state, target.id).passwordChanges).toBe(2);
    expect(await h.app.queue.secrets.get(h.app.scopes.scope(DEFAULT_ORG), actionId)).toBeUndefined();
  });

  it('a password no longer kept (expired) fails the action at once with a reason a person can act on', async () => {
    const target = apiUsers()[2]!;
    const actionId = await queuePasswordChange(deps(), { email: target.email, password: `Pw-${randomUUID()}-3` });
    await h.app.queue.secrets.drop(h.app.scopes.scope(DEFAULT_ORG), actionId);
    const [row] = await waitForActions(deps(), [actionId]);
    expect(row).toMatchObject({ status: 'failed', errorCode: 'SECRET_UNREADABLE', attempts: 1 });
    expect(row!.errorMessage).toMatch(/no longer kept .* ask for the change again/);
    expect(userAccount(h.sim.state, target.id).passwordChanges).toBe(0);
  });

  it('a change that fails for good (a weak password) deletes its password too', async () => {
    const target = apiUsers()[3]!;
    const actionId = await queuePasswordChange(deps(), { email: target.email, password: 'weakpassword' });
    const [row] = await waitForActions(deps(), [actionId]);
    expect(row).toMatchObject({ status: 'failed', errorCode: 'INVALID_PASSWORD' });
    expect(await h.app.queue.secrets.get(h.app.scopes.scope(DEFAULT_ORG), actionId)).toBeUndefined();
  });
});
