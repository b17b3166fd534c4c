import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { owner } from './helpers/owner.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * A PATCH right after a create is written over the row the create returned, without reading it
 * (src/scim/recent-users.ts). When the stored User moved on meanwhile (another worker, a Group's
 * members), nothing of the other write is lost, and a User deleted elsewhere is a 404.
 */

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
let h: ScimHarness;

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 31 } });
});
afterAll(async () => {
  await h?.close();
});

const user = (name: string, externalId: string) => ({ schemas: [USER], userName: `${name}${ORG_EMAIL_DOMAIN}`, externalId, name: { givenName: 'Recent', familyName: name } });
const patch = (value: Record<string, unknown>) => ({ schemas: [PATCH], Operations: [{ op: 'replace', value }] });

/** Another worker's write of the User: its resource changed and its version moved. */
async function writtenElsewhere(scimId: string, change: string): Promise<void> {
  await sql`update trainsync.scim_users set resource = resource || ${change}::jsonb, version = version + 1, updated_at = now() where scim_id = ${scimId}`.execute(owner(h.app).db);
}

describe('a change right after a write', () => {
  it('a PATCH after the create is applied, and its version moves on', async () => {
    const created = await h.request('POST', '/Users', user('first', 'R-1'));
    expect(created.status).toBe(201);
    const patched = await h.request('PATCH', `/Users/${created.json.id}`, patch({ title: 'Lead' }));
    expect(patched).toMatchObject({ status: 200, json: { title: 'Lead', meta: { version: 'W/"2"' } } });
    const again = await h.request('PATCH', `/Users/${created.json.id}`, patch({ title: 'Head' }));
    expect(again).toMatchObject({ status: 200, json: { title: 'Head', meta: { version: 'W/"3"' } } });
    expect((await h.request('GET', `/Users/${created.json.id}`)).json).toMatchObject({ title: 'Head' });
  });

  it('a User written elsewhere since is read again: the other write is kept beside the PATCH', async () => {
    const created = await h.request('POST', '/Users', user('second', 'R-2'));
    await writtenElsewhere(created.json.id, JSON.stringify({ displayName: 'Set elsewhere' }));
    const patched = await h.request('PATCH', `/Users/${created.json.id}`, patch({ title: 'Lead' }));
    expect(patched).toMatchObject({ status: 200, json: { title: 'Lead', displayName: 'Set elsewhere', meta: { version: 'W/"3"' } } });
    const stored = await owner(h.app).db.selectFrom('trainsync.scim_users').select(['resource', 'version']).where('scim_id', '=', created.json.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ version: 3, resource: { title: 'Lead', displayName: 'Set elsewhere' } });
  });

  it('a User deleted elsewhere since is a 404, not written', async () => {
    const created = await h.request('POST', '/Users', user('third', 'R-3'));
    await sql`update trainsync.scim_users set deleted_at = now() where scim_id = ${created.json.id}`.execute(owner(h.app).db);
    const patched = await h.request('PATCH', `/Users/${created.json.id}`, patch({ title: 'Lead' }));
    expect(patched.status).toBe(404);
    const stored = await owner(h.app).db.selectFrom('trainsync.scim_users').select('resource').where('scim_id', '=', created.json.id).executeTakeFirstOrThrow();
    expect(stored.resource).not.toHaveProperty('title');
  });

  it('a refusal is decided on the User as stored: a PATCH the remembered row would refuse is applied when the stored one allows it', async () => {
    const created = await h.request('POST', '/Users', user('fourth', 'R-4'));
    // Remembered: linked by externalId R-4, so another externalId would be a re-key (400). Stored now (another
    // worker's write): stating an externalId that is not its employee's, so it is not linked by it, and may state any.
    await writtenElsewhere(created.json.id, JSON.stringify({ externalId: 'OTHER' }));
    const patched = await h.request('PATCH', `/Users/${created.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'externalId', value: 'R-44' }] });
    expect(patched).toMatchObject({ status: 200, json: { externalId: 'R-44' } });
  });
});
