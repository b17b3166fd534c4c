import { owner } from './helpers/owner.ts';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUser, groupMembers, ORG_EMAIL_DOMAIN, writeCallCount } from '../src/simulator/index.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * The request sequence of Okta's SCIM 2.0 validation ("Runscope" spec for OIN apps):
 * users without externalId, PUT for profile changes, path-less PATCH for active, and
 * group pushes with PATCH members add/remove. After each change, the platform
 * (simulator) and training.employees are checked.
 */

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
let h: ScimHarness;

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 21 } });
});
afterAll(async () => {
  if (process.env.SCIM_SEQUENCES_OUT) writeFileSync(process.env.SCIM_SEQUENCES_OUT, `# Okta-style sequence (test/scim-okta.test.ts)\n\n${h.transcript.join('\n')}`, { flag: 'a' });
  await h?.close();
});

const email = `okta.ann${ORG_EMAIL_DOMAIN}`;

/** The employee row once the create job's account has reached it (the SCIM sweep fills it in). */
function employeeWithAccount(employeeId: string) {
  return waitFor(async () => {
    const row = await employee(employeeId);
    return row.user_id === null ? undefined : row;
  }, 10_000, `training.employees.user_id of ${employeeId}`);
}

async function employee(employeeId: string) {
  return owner(h.app).db.selectFrom('training.employees').selectAll().where('employee_id', '=', employeeId).executeTakeFirstOrThrow();
}

describe('Okta validation sequence', () => {
  let id: string;
  let employeeId: string;

  it('lists users and finds no user for an unknown userName', async () => {
    const list = await h.request('GET', '/Users?count=1&startIndex=1');
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, Resources: [] });
    const missing = await h.request('GET', `/Users?filter=${encodeURIComponent(`userName eq "nobody${ORG_EMAIL_DOMAIN}"`)}`);
    expect(missing.status).toBe(200);
    expect(missing.json).toMatchObject({ totalResults: 0, Resources: [] });
  });

  it('creates a user: the account exists on the platform and the employee in training.employees', async () => {
    const created = await h.request('POST', '/Users', {
      schemas: [USER],
      userName: email,
      name: { givenName: 'Ann', familyName: 'Okta' },
      emails: [{ primary: true, value: email, type: 'work' }],
      displayName: 'Ann Okta',
      locale: 'en-US',
      active: true,
    });
    expect(created.status).toBe(201);
    id = created.json.id;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.json).toMatchObject({ userName: email, active: true, name: { givenName: 'Ann', familyName: 'Okta' }, meta: { resourceType: 'User', location: `${h.base}/Users/${id}` } });
    const stored = await owner(h.app).db.selectFrom('trainsync.scim_users').selectAll().where('scim_id', '=', id).executeTakeFirstOrThrow();
    employeeId = stored.employee_id;
    expect(employeeId).toBe(`scim-${id}`);
    await h.settled();
    const account = findUser(h.sim.state, email);
    expect(account).toMatchObject({ firstName: 'Ann', lastName: 'Okta', hasAccess: true, organisationIdentifier: employeeId });
    expect(await employeeWithAccount(employeeId)).toMatchObject({ email, first_name: 'Ann', last_name: 'Okta', status: 'active', user_id: account!.id });
    const audit = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').selectAll().where('employee_id', '=', employeeId).execute();
    expect(audit).toMatchObject([{ kind: 'create-user', status: 'succeeded', feed_hash: 'via SCIM' }]);
  });

  it('gets the user by id and by userName filter; a second POST of the same userName is a 409', async () => {
    const got = await h.request('GET', `/Users/${id}`);
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({ id, userName: email, displayName: 'Ann Okta', emails: [{ value: email }] });
    const found = await h.request('GET', `/Users?filter=${encodeURIComponent(`userName eq "${email.toUpperCase()}"`)}&startIndex=1&count=100`);
    expect(found.json).toMatchObject({ totalResults: 1, itemsPerPage: 1, Resources: [{ id }] });
    const again = await h.request('POST', '/Users', { schemas: [USER], userName: email, name: { givenName: 'Ann', familyName: 'Okta' } });
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '409', scimType: 'uniqueness' });
    expect(await h.request('GET', '/Users/2819c223-7f76-453a-919d-413861904646')).toMatchObject({ status: 404, json: { status: '404' } });
  });

  it('replaces the name with PUT: training.employees follows; the platform keeps its name (no update endpoint)', async () => {
    const put = await h.request('PUT', `/Users/${id}`, { schemas: [USER], id, userName: email, name: { givenName: 'Annie', familyName: 'Okta-Smith' }, active: true });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ id, name: { givenName: 'Annie', familyName: 'Okta-Smith' }, meta: { version: 'W/"2"' } });
    await h.settled();
    expect(await employee(employeeId)).toMatchObject({ first_name: 'Annie', last_name: 'Okta-Smith', status: 'active' });
    expect(findUser(h.sim.state, email)).toMatchObject({ firstName: 'Ann', hasAccess: true });
  });

  it('deactivates with a path-less PATCH {"active": false}, and reactivates', async () => {
    const off = await h.request('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(off.status).toBe(200);
    expect(off.json).toMatchObject({ id, active: false });
    await h.settled();
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(false);
    expect(await employee(employeeId)).toMatchObject({ status: 'inactive' });

    // A retry of the same PATCH: same answer, no platform write.
    const writes = writeCallCount(h.sim.requests);
    const retry = await h.request('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(retry.json).toEqual(off.json);
    await h.settled();
    expect(writeCallCount(h.sim.requests)).toBe(writes);

    const on = await h.request('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] });
    expect(on.json).toMatchObject({ active: true });
    await h.settled();
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(true);
    expect(await employee(employeeId)).toMatchObject({ status: 'active' });
  });

  it('pushes a group (maps an existing platform group) and adds and removes the member', async () => {
    const platformGroup = h.sim.state.groups[1]!;
    const pushed = await h.request('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: platformGroup.name, members: [] });
    expect(pushed.status).toBe(201);
    expect(pushed.json).toMatchObject({ id: platformGroup.id, displayName: platformGroup.name, members: [] });

    const add = await h.request('PATCH', `/Groups/${platformGroup.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: id, display: email }] }] });
    expect(add.status).toBe(204);
    await h.settled();
    const accountId = findUser(h.sim.state, email)!.id;
    expect(groupMembers(h.sim.state, platformGroup.id)).toContain(accountId);
    expect((await h.request('GET', `/Groups/${platformGroup.id}`)).json.members).toMatchObject([{ value: id, display: email }]);

    const remove = await h.request('PATCH', `/Groups/${platformGroup.id}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${id}"]` }] });
    expect(remove.status).toBe(204);
    await h.settled();
    expect(groupMembers(h.sim.state, platformGroup.id)).not.toContain(accountId);
    expect((await h.request('GET', `/Groups/${platformGroup.id}`)).json.members).toEqual([]);
  });

  it('refuses a group the platform does not have (it cannot create groups)', async () => {
    const unknown = await h.request('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'No Such Group' });
    expect(unknown.status).toBe(400);
    expect(unknown.json).toMatchObject({ scimType: 'invalidValue' });
    expect(unknown.json.detail).toMatch(/cannot create groups/);
  });

  it('deletes the user: the account is disabled (not deleted) and the User is gone', async () => {
    const deleted = await h.request('DELETE', `/Users/${id}`);
    expect(deleted.status).toBe(204);
    await h.settled();
    expect(findUser(h.sim.state, email)).toMatchObject({ hasAccess: false });
    expect(await employee(employeeId)).toMatchObject({ status: 'inactive' });
    expect((await h.request('GET', `/Users/${id}`)).status).toBe(404);
  });
});
