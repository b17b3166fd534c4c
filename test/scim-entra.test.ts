import { owner } from './helpers/owner.ts';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUser, groupMembers, ORG_EMAIL_DOMAIN, writeCallCount } from '../src/simulator/index.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * The request sequence of Microsoft Entra's provisioning (and its SCIM validator):
 * externalId and the enterprise extension, capitalised ops, PATCH with paths and
 * "False" as text, groups matched by displayName filter, members added and removed by
 * value lists. After each change, the platform (simulator) and training.employees are checked.
 */

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
let h: ScimHarness;

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 22 } });
});
afterAll(async () => {
  if (process.env.SCIM_SEQUENCES_OUT) writeFileSync(process.env.SCIM_SEQUENCES_OUT, `# Entra-style sequence (test/scim-entra.test.ts)\n\n${h.transcript.join('\n')}`, { flag: 'a' });
  await h?.close();
});

const email = `ben.entra${ORG_EMAIL_DOMAIN}`;
const employeeId = 'E-4711';
const filter = (text: string) => encodeURIComponent(text);

async function employee() {
  return owner(h.app).db.selectFrom('training.employees').selectAll().where('employee_id', '=', employeeId).executeTakeFirstOrThrow();
}

describe('Entra validation sequence', () => {
  let id: string;

  it('finds no user for a userName not provisioned yet', async () => {
    const missing = await h.request('GET', `/Users?filter=${filter(`userName eq "${email}"`)}`);
    expect(missing).toMatchObject({ status: 200, json: { totalResults: 0, Resources: [] } });
  });

  it('creates a user with externalId and the enterprise extension', async () => {
    const created = await h.request('POST', '/Users', {
      schemas: [USER, ENTERPRISE],
      externalId: employeeId,
      userName: email,
      active: true,
      displayName: 'Ben Entra',
      name: { formatted: 'Ben Entra', givenName: 'Ben', familyName: 'Entra' },
      emails: [{ primary: true, type: 'work', value: email }],
      [ENTERPRISE]: { employeeNumber: employeeId, department: 'Finance', costCenter: 'CC-12', manager: { value: 'E-1000' } },
    });
    expect(created.status).toBe(201);
    id = created.json.id;
    expect(created.json).toMatchObject({ externalId: employeeId, [ENTERPRISE]: { department: 'Finance' } });
    await h.settled();
    expect(findUser(h.sim.state, email)).toMatchObject({ firstName: 'Ben', lastName: 'Entra', hasAccess: true, organisationIdentifier: employeeId });
    expect(await employee()).toMatchObject({ email, status: 'active', attributes: { department: 'Finance', costCenter: 'CC-12', manager: 'E-1000' } });
  });

  it('gets the user by userName and by externalId filter (and)', async () => {
    const found = await h.request('GET', `/Users?filter=${filter(`userName eq "${email}" and externalId eq "${employeeId}"`)}`);
    expect(found.json).toMatchObject({ totalResults: 1, Resources: [{ id, userName: email }] });
    const other = await h.request('GET', `/Users?filter=${filter(`externalId eq "E-0000"`)}`);
    expect(other.json).toMatchObject({ totalResults: 0 });
  });

  it('replaces the name and department with capitalised "Replace" ops and paths', async () => {
    const patched = await h.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH],
      Operations: [
        { op: 'Replace', path: 'name.givenName', value: 'Benjamin' },
        { op: 'Replace', path: 'name.familyName', value: 'Entra-Jones' },
        { op: 'Replace', path: `${ENTERPRISE}:department`, value: 'Audit' },
      ],
    });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ name: { givenName: 'Benjamin', familyName: 'Entra-Jones' }, [ENTERPRISE]: { department: 'Audit' } });
    await h.settled();
    expect(await employee()).toMatchObject({ first_name: 'Benjamin', last_name: 'Entra-Jones', attributes: { department: 'Audit' } });
    const history = await owner(h.app).db.selectFrom('training.employee_history').selectAll().where('employee_id', '=', employeeId).orderBy('valid_from').execute();
    expect(history.map((r) => r.first_name)).toEqual(['Ben', 'Benjamin']);
  });

  it('deactivates with {"op": "Replace", "path": "active", "value": "False"}; a replay makes no platform write; reactivates', async () => {
    const body = { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] };
    const off = await h.request('PATCH', `/Users/${id}`, body);
    expect(off.json).toMatchObject({ active: false });
    await h.settled();
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(false);
    expect(await employee()).toMatchObject({ status: 'inactive' });

    const writes = writeCallCount(h.sim.requests);
    const replay = await h.request('PATCH', `/Users/${id}`, body);
    expect(replay.json).toEqual(off.json);
    await h.settled();
    expect(writeCallCount(h.sim.requests)).toBe(writes);

    const on = await h.request('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', value: { active: true } }] });
    expect(on.json).toMatchObject({ active: true });
    await h.settled();
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(true);
    expect(await employee()).toMatchObject({ status: 'active' });
  });

  it('matches a group by displayName and adds and removes the member with value lists', async () => {
    const platformGroup = h.sim.state.groups[0]!;
    const matched = await h.request('GET', `/Groups?excludedAttributes=members&filter=${filter(`displayName eq "${platformGroup.name}"`)}`);
    expect(matched.json).toMatchObject({ totalResults: 1, Resources: [{ id: platformGroup.id, displayName: platformGroup.name }] });
    expect(matched.json.Resources[0].members).toBeUndefined();

    const add = await h.request('PATCH', `/Groups/${platformGroup.id}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: [{ value: id }] }] });
    expect(add.status).toBe(204);
    await h.settled();
    const accountId = findUser(h.sim.state, email)!.id;
    expect(groupMembers(h.sim.state, platformGroup.id)).toContain(accountId);

    const remove = await h.request('PATCH', `/Groups/${platformGroup.id}`, { schemas: [PATCH], Operations: [{ op: 'Remove', path: 'members', value: [{ value: id }] }] });
    expect(remove.status).toBe(204);
    await h.settled();
    expect(groupMembers(h.sim.state, platformGroup.id)).not.toContain(accountId);
  });

  it('deletes the user: the account is disabled, the employee inactive, the User 404', async () => {
    expect((await h.request('DELETE', `/Users/${id}`)).status).toBe(204);
    await h.settled();
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(false);
    expect(await employee()).toMatchObject({ status: 'inactive' });
    expect(await h.request('GET', `/Users/${id}`)).toMatchObject({ status: 404, json: { schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'] } });
    expect((await h.request('GET', `/Users?filter=${filter(`userName eq "${email}"`)}`)).json.totalResults).toBe(0);
  });
});
