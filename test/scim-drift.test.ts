import { owner } from './helpers/owner.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUser, ORG_EMAIL_DOMAIN, writeCallCount } from '../src/simulator/index.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * A SCIM change is planned against the platform as it is now, as a feed is: an IdP that
 * states "inactive" again for a user someone re-enabled by hand on the platform gets them
 * disabled again, where planning from trainsync's own record alone would see no change.
 */

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const email = `drift.dora${ORG_EMAIL_DOMAIN}`;
let h: ScimHarness;

beforeAll(async () => {
  // 0 minutes: training.users never stands in for the platform, every plan reads it.
  h = await createScimHarness({ simulator: { seed: 23 }, env: { TRAINSYNC_PLATFORM_FRESHNESS_MINUTES: '0' } });
});
afterAll(async () => {
  await h?.close();
});

/** A change made on the platform outside trainsync, over the API. */
async function byHand(method: 'PATCH', path: string): Promise<void> {
  const response = await fetch(`${h.sim.url}/api/v2/${path}`, { method, headers: { authorization: `Bearer ${h.sim.apiKey}` } });
  expect(response.status).toBe(204);
}

describe('SCIM against the platform as it is now', () => {
  it('disables again a user re-enabled by hand when the IdP states inactive again; with no drift, no write', async () => {
    const created = await h.request('POST', '/Users', { schemas: [USER], userName: email, name: { givenName: 'Dora', familyName: 'Drift' }, active: true });
    expect(created.status).toBe(201);
    const id: string = created.json.id;
    await h.settled();
    const off = { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] };
    expect((await h.request('PATCH', `/Users/${id}`, off)).status).toBe(200);
    await h.settled();
    const account = findUser(h.sim.state, email)!;
    expect(account.hasAccess).toBe(false);

    // No drift: the same statement again reads the platform and writes nothing.
    const quiet = writeCallCount(h.sim.requests);
    expect((await h.request('PATCH', `/Users/${id}`, off)).status).toBe(200);
    await h.settled();
    expect(writeCallCount(h.sim.requests)).toBe(quiet);

    await byHand('PATCH', `users/${account.id}/enable`);
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(true);
    expect((await h.request('PATCH', `/Users/${id}`, off)).status).toBe(200);
    await h.settled();
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(false);
    const repairs = await owner(h.app).db
      .selectFrom('trainsync.provisioning_actions')
      .select(['kind', 'status', 'feed_hash', 'after'])
      .where('email', '=', email)
      .where('kind', '=', 'disable')
      .orderBy('updated_at', 'desc')
      .execute();
    expect(repairs[0]).toMatchObject({ kind: 'disable', status: 'succeeded', feed_hash: 'via SCIM' });
    expect(JSON.stringify(repairs[0]!.after)).toContain('platform shows access');
  });
});
