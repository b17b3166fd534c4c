import { owner } from './helpers/owner.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUser, groupMembers, ORG_EMAIL_DOMAIN, userAccount } from '../src/simulator/index.ts';
import { REDIS_URL } from './helpers/redis.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * What identity providers send that the endpoint used to refuse or mishandle: Okta's
 * password on create, a userName that is not an e-mail, group member values that are not
 * User ids, attributes/excludedAttributes, a group POST whose externalId is mapped
 * elsewhere, a lower-case resource path; and the in-flight limit's 429.
 */

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
let h: ScimHarness;

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 31 }, env: { TRAINSYNC_SECRET_KEY: randomBytes(32).toString('hex') } });
});
afterAll(async () => {
  await h?.close();
});

/** Every row of the tables SCIM and provisioning write, as one string. */
async function databaseText(): Promise<string> {
  let text = '';
  for (const table of ['trainsync.scim_users', 'trainsync.provisioning_actions', 'training.employees', 'trainsync.identities']) {
    const { rows } = await h.database.pool.query<{ t: string }>(`select t::text as t from ${table} t`);
    text += rows.map((r) => r.t).join('\n');
  }
  return text;
}

/** Every hash value under this test's BullMQ prefix (the queued jobs' payloads). */
async function redisText(): Promise<string> {
  const redis = new Redis(REDIS_URL);
  try {
    let text = '';
    for await (const batch of redis.scanStream({ match: `${h.prefix}*`, count: 500 }) as AsyncIterable<string[]>) {
      for (const key of batch) if ((await redis.type(key)) === 'hash') text += JSON.stringify(await redis.hgetall(key));
    }
    return text;
  } finally {
    redis.disconnect();
  }
}

describe('Okta: a password on create, PUT and PATCH', () => {
  const email = `pat.password${ORG_EMAIL_DOMAIN}`;
  const passwords = ['Create-1mz050nq', 'Put-2kq9rr7x', 'Patch-3zz81abc'];
  let id: string;
  const account = () => userAccount(h.sim.state, findUser(h.sim.state, email)!.id);

  it('create with a password: 201 without it; the account is created, then its password set (a set-password job)', async () => {
    const created = await h.request('POST', '/Users', { schemas: [USER], userName: email, name: { givenName: 'Pat', familyName: 'Password' }, password: passwords[0], active: true });
    expect(created.status).toBe(201);
    id = created.json.id;
    expect(JSON.stringify(created.json)).not.toContain(passwords[0]);
    expect(created.json.password).toBeUndefined();
    await h.settled();
    expect(account()).toMatchObject({ passwordSet: true, passwordChanges: 1 });
    const actions = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').select(['kind', 'status']).where('email', '=', email).orderBy('created_at').execute();
    expect(actions).toEqual([
      { kind: 'create-user', status: 'succeeded' },
      { kind: 'set-password', status: 'succeeded' },
    ]);
    expect((await h.request('GET', `/Users/${id}`)).json.password).toBeUndefined();
  });

  it('PUT and PATCH with a password each queue a change; the rest of the User is applied as usual', async () => {
    const put = await h.request('PUT', `/Users/${id}`, { schemas: [USER], userName: email, name: { givenName: 'Pat', familyName: 'Password' }, password: passwords[1], active: true });
    expect(put.status).toBe(200);
    await h.settled();
    expect(account()).toMatchObject({ passwordChanges: 2 });
    const patch = await h.request('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'password', value: passwords[2] }] });
    expect(patch.status).toBe(200);
    expect(patch.json.password).toBeUndefined();
    await h.settled();
    expect(account()).toMatchObject({ passwordChanges: 3 });
    expect(findUser(h.sim.state, email)).toMatchObject({ hasAccess: true });
  });

  it('no password is in the logs, the tables or the queue in plain text (nor in job data at all; its encrypted copy is gone once used)', async () => {
    const logs = h.logLines.join('');
    const db = await databaseText();
    const redis = await redisText();
    expect(db).toContain('set-password');
    expect(redis).toContain('set-password');
    expect(redis).not.toMatch(/v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\./);
    for (const secret of passwords) {
      expect(logs).not.toContain(secret);
      expect(db).not.toContain(secret);
      expect(redis).not.toContain(secret);
    }
  });
});

describe('a userName that is not an e-mail', () => {
  it('takes the account e-mail from emails: the primary one, else type work; userName is kept as sent', async () => {
    const primary = `emp.primary${ORG_EMAIL_DOMAIN}`;
    const created = await h.request('POST', '/Users', {
      schemas: [USER],
      userName: 'E-20817',
      name: { givenName: 'Una', familyName: 'Upn' },
      emails: [{ value: `home.una${ORG_EMAIL_DOMAIN}`, type: 'home' }, { Value: primary, Type: 'work', Primary: 'True' }],
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ userName: 'E-20817', emails: [{ type: 'home' }, { value: primary, type: 'work', primary: 'True' }] });
    const work = `emp.work${ORG_EMAIL_DOMAIN}`;
    const byType = await h.request('POST', '/Users', { schemas: [USER], userName: 'CORP\\wim', name: { givenName: 'Wim', familyName: 'Work' }, emails: [{ value: work, type: 'work' }] });
    expect(byType.status).toBe(201);
    await h.settled();
    expect(findUser(h.sim.state, primary)).toMatchObject({ firstName: 'Una', lastName: 'Upn' });
    expect(findUser(h.sim.state, work)).toMatchObject({ firstName: 'Wim' });
    const found = await h.request('GET', `/Users?filter=${encodeURIComponent('userName eq "e-20817"')}`);
    expect(found.json).toMatchObject({ totalResults: 1, Resources: [{ id: created.json.id, userName: 'E-20817' }] });
  });

  it('without an e-mail in either: 400 invalidValue naming both, nothing stored', async () => {
    const refused = await h.request('POST', '/Users', { schemas: [USER], userName: 'E-99', name: { givenName: 'No', familyName: 'Mail' }, emails: [{ value: 'not-a-mailbox', primary: true }] });
    expect(refused).toMatchObject({ status: 400, json: { schemas: [ERROR], scimType: 'invalidValue' } });
    expect(refused.json.detail).toMatch(/userName "E-99" is not an e-mail address and emails has none/);
    expect(await owner(h.app).db.selectFrom('trainsync.scim_users').select('scim_id').where('user_name', '=', 'E-99').execute()).toEqual([]);
  });
});

describe('group members that are not User ids', () => {
  it('POST /Groups with members [{"value": "null"}]: 400 invalidValue, and no mapping is written', async () => {
    const group = h.sim.state.groups[0]!;
    const refused = await h.request('POST', '/Groups', { schemas: [GROUP], displayName: group.name, externalId: 'okta-g1', members: [{ value: 'null' }] });
    expect(refused).toMatchObject({ status: 400, json: { schemas: [ERROR], scimType: 'invalidValue' } });
    expect(refused.json.detail).toMatch(/"null" is not a User id/);
    expect(await owner(h.app).db.selectFrom('trainsync.scim_groups').selectAll().execute()).toEqual([]);
    // A User id no User has: refused too, still nothing written.
    const unknown = await h.request('POST', '/Groups', { schemas: [GROUP], displayName: group.name, members: [{ value: randomUUID() }] });
    expect(unknown).toMatchObject({ status: 400, json: { scimType: 'invalidValue' } });
    expect(await owner(h.app).db.selectFrom('trainsync.scim_groups').selectAll().execute()).toEqual([]);
  });

  it('a PATCH add of such a value: 400 invalidValue, the members unchanged', async () => {
    const group = h.sim.state.groups[0]!;
    const user = await h.request('POST', '/Users', { schemas: [USER], userName: `member.one${ORG_EMAIL_DOMAIN}`, name: { givenName: 'Mem', familyName: 'Ber' } });
    const mapped = await h.request('POST', '/Groups', { schemas: [GROUP], displayName: group.name, members: [{ value: user.json.id }] });
    expect(mapped.status).toBe(201);
    const refused = await h.request('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: 'null' }, { value: '12' }] }] });
    expect(refused).toMatchObject({ status: 400, json: { scimType: 'invalidValue' } });
    expect((await h.request('GET', `/Groups/${group.id}`)).json.members).toMatchObject([{ value: user.json.id }]);
    await h.settled();
    expect(groupMembers(h.sim.state, group.id)).toContain(findUser(h.sim.state, `member.one${ORG_EMAIL_DOMAIN}`)!.id);
  });
});

describe('attributes and excludedAttributes', () => {
  it('on Users, listed and by id: only what is asked, id and schemas always', async () => {
    const list = await h.request('GET', '/Users?attributes=userName,name.givenName&count=2');
    expect(list.status).toBe(200);
    for (const r of list.json.Resources) {
      expect(Object.keys(r).sort()).toEqual(['id', 'name', 'schemas', 'userName']);
      expect(Object.keys(r.name)).toEqual(['givenName']);
    }
    const one = list.json.Resources[0];
    const byId = await h.request('GET', `/Users/${one.id}?excludedAttributes=meta,name,emails`);
    expect(byId.json).toMatchObject({ id: one.id, userName: one.userName, schemas: [USER] });
    expect(byId.json.meta).toBeUndefined();
    expect(byId.json.name).toBeUndefined();
    const urn = await h.request('GET', `/Users/${one.id}?attributes=urn:ietf:params:scim:schemas:core:2.0:User:userName`);
    expect(Object.keys(urn.json).sort()).toEqual(['id', 'schemas', 'userName']);
  });

  it('on Groups: Entra\'s excludedAttributes=members, and attributes=displayName', async () => {
    const group = h.sim.state.groups[0]!;
    const excluded = await h.request('GET', `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`displayName eq "${group.name}"`)}`);
    expect(excluded.json.Resources).toHaveLength(1);
    expect(excluded.json.Resources[0].members).toBeUndefined();
    expect(excluded.json.Resources[0]).toMatchObject({ id: group.id, displayName: group.name });
    const only = await h.request('GET', `/Groups/${group.id}?attributes=displayName`);
    expect(only.json).toEqual({ schemas: [GROUP], id: group.id, displayName: group.name });
  });
});

describe('POST /Groups: displayName decides', () => {
  it('a create for "B" carrying the externalId mapped to "A" is 409 uniqueness, not a 201 with A', async () => {
    const [a, b] = [h.sim.state.groups[1]!, h.sim.state.groups[2]!];
    expect((await h.request('POST', '/Groups', { schemas: [GROUP], displayName: a.name, externalId: 'entra-sales' })).json).toMatchObject({ id: a.id });
    const clash = await h.request('POST', '/Groups', { schemas: [GROUP], displayName: b.name, externalId: 'entra-sales' });
    expect(clash).toMatchObject({ status: 409, json: { schemas: [ERROR], scimType: 'uniqueness' } });
    expect(clash.json.detail).toContain(a.id);
    // The same externalId for the same group again: the mapping, unchanged.
    expect((await h.request('POST', '/Groups', { schemas: [GROUP], displayName: a.name, externalId: 'entra-sales' })).status).toBe(201);
    // Without a displayName the externalId mapped before still finds its group.
    expect((await h.request('POST', '/Groups', { schemas: [GROUP], externalId: 'entra-sales' })).json).toMatchObject({ id: a.id });
  });
});

describe('paths', () => {
  it('/users in lower case is the Users endpoint; an unknown organisation\'s 404 names the /Users path', async () => {
    const lower = await fetch(`${h.base}/users?count=1`, { headers: { authorization: `Bearer ${h.token}` } });
    expect(lower.status).toBe(200);
    expect(((await lower.json()) as { schemas: string[] }).schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:ListResponse']);
    const unknown = await fetch(`${h.base}/nosuchorg/Users`, { headers: { authorization: `Bearer ${h.token}` } });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { detail: string }).detail).toMatch(/\/scim\/v2\/default\/Users or \/scim\/v2\/Users/);
  });
});
