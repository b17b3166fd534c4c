import { owner } from './helpers/owner.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisioningAttentionSection } from '../src/commands/status/provisioning-status.ts';
import { provisionFeed, type ProvisionResult } from '../src/provisioning/provision-feed.ts';
import { findUser, groupMembers, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { feedDir, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/** A platform without GET users: a new account's id cannot be looked up. */
let h: SyncHarness;
let files: ReturnType<typeof feedDir>;

beforeAll(async () => {
  h = await createSyncHarness({ simulator: { seed: 5, usersEndpoint: false, sizes: { users: 10, groups: 2, courses: 3, results: 5 } } });
  files = feedDir();
});
afterAll(async () => {
  await h?.close();
  files?.cleanup();
});

function run(rows: readonly HrRow[]): Promise<ProvisionResult> {
  const file = files.write(`feed-${Math.random().toString(36).slice(2)}.csv`, toCsv(rows));
  return provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'delta', dryRun: false, force: false });
}

describe('identities: an id nobody can find', () => {
  const email = `nia.newcomer${ORG_EMAIL_DOMAIN}`;
  let group: string;
  let row: HrRow;

  beforeAll(() => {
    group = h.sim.state.groups[0]!.id;
    row = { employee_id: 'N1', email, first_name: 'Nia', last_name: 'Newcomer', status: 'active', groups: [group], role: 'USER', organisation_identifier: 'N1' };
  });

  it('creates the account, then keeps the group change waiting as needs-identity, visible in status', async () => {
    const result = await run([row]);
    expect(result.adoptionNote).toMatch(/offers no GET users/);
    const [create, add] = result.applied!.audit;
    expect(create).toMatchObject({ kind: 'create-user', status: 'succeeded' });
    expect(add).toMatchObject({ kind: 'add-to-group', status: 'needs-identity', errorCode: 'NEEDS_IDENTITY' });
    expect(add!.errorMessage).toMatch(/platform_user_id/);
    const created = findUser(h.sim.state, email)!;
    expect(created).toBeDefined();
    expect(groupMembers(h.sim.state, group)).not.toContain(created.id);
    const identity = await owner(h.app).db.selectFrom('trainsync.identities').selectAll().where('employee_id', '=', 'N1').executeTakeFirstOrThrow();
    expect(identity.platform_user_id).toBeNull();

    const section = await provisioningAttentionSection(h.app, 'default');
    expect(section.rows).toEqual([expect.objectContaining({ action: add!.actionId, status: 'needs-identity', employee: 'N1' })]);
  });

  it('the same feed again keeps it waiting (never dropped); the id from the feed settles it', async () => {
    const again = await run([row]);
    expect(again.applied!.audit.map((r) => [r.kind, r.status])).toEqual([['add-to-group', 'needs-identity']]);
    expect((await provisioningAttentionSection(h.app, 'default')).rows).toHaveLength(1);

    const platformUserId = findUser(h.sim.state, email)!.id;
    const fixed = await run([{ ...row, platform_user_id: platformUserId }]);
    expect(fixed.applied!.audit.map((r) => [r.kind, r.status])).toEqual([['add-to-group', 'succeeded']]);
    expect(groupMembers(h.sim.state, group)).toContain(platformUserId);
    const identity = await owner(h.app).db.selectFrom('trainsync.identities').selectAll().where('employee_id', '=', 'N1').executeTakeFirstOrThrow();
    expect(identity).toMatchObject({ platform_user_id: platformUserId, groups: [group] });
    // The stale needs-identity row is settled by the action that did the work.
    expect((await provisioningAttentionSection(h.app, 'default')).rows).toEqual([]);
  });
});
