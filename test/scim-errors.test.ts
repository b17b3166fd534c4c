import { owner } from './helpers/owner.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/** Refusals: the token, bodies, filters and paths, each in the SCIM error schema; and discovery. */

const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
let h: ScimHarness;

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 23 }, env: { TRAINSYNC_SCIM_MAX_BODY_BYTES: '2048' } });
});
afterAll(async () => {
  await h?.close();
});

const user = (name: string) => ({ schemas: [USER], userName: `${name}${ORG_EMAIL_DOMAIN}`, name: { givenName: 'Err', familyName: name } });

describe('SCIM refusals', () => {
  it('401 without a token, with a wrong one, and with another scheme', async () => {
    for (const token of [null, `${h.token}x`, h.token.slice(0, -1), 'short']) {
      const answer = await h.request('GET', '/Users', undefined, { token });
      expect(answer.status).toBe(401);
      expect(answer.json).toMatchObject({ schemas: [ERROR], status: '401' });
    }
    const basic = await fetch(`${h.base}/Users`, { headers: { authorization: `Basic ${h.token}` } });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('400 invalidSyntax for malformed JSON (nothing is stored); an attribute no schema defines is ignored, not stored nor returned', async () => {
    const malformed = await h.request('POST', '/Users', undefined, { raw: '{"userName": "a@b.c",' });
    expect(malformed).toMatchObject({ status: 400, json: { schemas: [ERROR], status: '400', scimType: 'invalidSyntax' } });
    expect(await owner(h.app).db.selectFrom('trainsync.scim_users').select('scim_id').execute()).toEqual([]);
    const unknown = await h.request('POST', '/Users', { ...user('typo'), favouriteColour: 'blue', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { shoeSize: 9, department: 'Ops' } });
    expect(unknown.status).toBe(201);
    expect(JSON.stringify(unknown.json)).not.toMatch(/favouriteColour|shoeSize/);
    expect(unknown.json['urn:ietf:params:scim:schemas:extension:enterprise:2.0:User']).toEqual({ department: 'Ops' });
    const stored = await owner(h.app).db.selectFrom('trainsync.scim_users').select('resource').where('scim_id', '=', unknown.json.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored.resource)).not.toMatch(/favouriteColour|shoeSize/);
    expect((await h.request('DELETE', `/Users/${unknown.json.id}`)).status).toBe(204);
  });

  it('400 invalidValue for a userName that is not an e-mail and for missing names', async () => {
    const noMailbox = await h.request('POST', '/Users', { ...user('x'), userName: 'not-an-email' });
    expect(noMailbox).toMatchObject({ status: 400, json: { scimType: 'invalidValue' } });
    expect(noMailbox.json.detail).toMatch(/userName "not-an-email" is not an e-mail address and emails has none/);
    const nameless = await h.request('POST', '/Users', { schemas: [USER], userName: `nameless${ORG_EMAIL_DOMAIN}` });
    expect(nameless).toMatchObject({ status: 400, json: { scimType: 'invalidValue' } });
    expect(nameless.json.detail).toMatch(/name\.givenName and name\.familyName/);
  });

  it('400 invalidFilter for a filter that cannot be read or is not supported', async () => {
    for (const filter of ['userName eq', 'userName co "ann"', 'title eq "x"', 'userName eq "a" or userName eq "b"']) {
      const answer = await h.request('GET', `/Users?filter=${encodeURIComponent(filter)}`);
      expect(answer, filter).toMatchObject({ status: 400, json: { schemas: [ERROR], scimType: 'invalidFilter' } });
    }
  });

  it('400 for a PATCH to an unknown path or with an unknown op; 409 for a userName taken; 413 over the body limit', async () => {
    const a = await h.request('POST', '/Users', user('patchme'));
    const b = await h.request('POST', '/Users', user('other'));
    expect([a.status, b.status]).toEqual([201, 201]);
    const path = await h.request('PATCH', `/Users/${a.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'shoeSize', value: 9 }] });
    expect(path).toMatchObject({ status: 400, json: { scimType: 'invalidPath' } });
    const op = await h.request('PATCH', `/Users/${a.json.id}`, { schemas: [PATCH], Operations: [{ op: 'merge', value: { active: false } }] });
    expect(op).toMatchObject({ status: 400, json: { scimType: 'invalidSyntax' } });
    const taken = await h.request('PATCH', `/Users/${a.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'userName', value: b.json.userName }] });
    expect(taken).toMatchObject({ status: 409, json: { scimType: 'uniqueness' } });
    const rekey = await h.request('PATCH', `/Users/${a.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'externalId', value: 'NEW-KEY' }] });
    expect(rekey).toMatchObject({ status: 400, json: { scimType: 'mutability' } });
    const big = await h.request('POST', '/Users', { ...user('big'), displayName: 'x'.repeat(4096) });
    expect(big).toMatchObject({ status: 413, json: { schemas: [ERROR], status: '413' } });
    await h.settled();
  });

  it('creates sent together (batched): a taken userName gets its own 409; two stating one externalId are both created, one linked by it', async () => {
    const twins = await Promise.all([
      h.request('POST', '/Users', user('twin')),
      h.request('POST', '/Users', user('twin')),
      h.request('POST', '/Users', { ...user('keyed-a'), externalId: 'E-TWIN' }),
      h.request('POST', '/Users', { ...user('keyed-b'), externalId: 'E-TWIN' }),
      h.request('POST', '/Users', user('single')),
    ]);
    expect(twins.map((t) => t.status).sort()).toEqual([201, 201, 201, 201, 409]);
    for (const refused of twins.filter((t) => t.status === 409)) expect(refused.json).toMatchObject({ schemas: [ERROR], scimType: 'uniqueness' });
    const stored = await owner(h.app).db.selectFrom('trainsync.scim_users').select(['scim_id', 'user_name', 'employee_id', 'external_id']).where('user_name', 'in', ['twin', 'keyed-a', 'keyed-b', 'single'].map((n) => `${n}${ORG_EMAIL_DOMAIN}`)).execute();
    expect(stored.filter((r) => r.user_name.startsWith('twin'))).toHaveLength(1);
    // externalId is not unique in SCIM: both keep it (and a filter finds both); the HR employee is one of them only.
    const keyed = stored.filter((r) => r.external_id === 'E-TWIN');
    expect(keyed).toHaveLength(2);
    expect(keyed.filter((r) => r.employee_id === 'E-TWIN')).toHaveLength(1);
    expect(keyed.find((r) => r.employee_id !== 'E-TWIN')!.employee_id).toMatch(/^scim-/);
    const found = await h.request('GET', `/Users?filter=${encodeURIComponent('externalId eq "E-TWIN"')}`);
    expect(found.json.totalResults).toBe(2);
    // The one not linked states it again (PUT, PATCH): no mutability error, its employee unchanged; the linked one cannot change it.
    const unlinked = keyed.find((r) => r.employee_id !== 'E-TWIN')!;
    const again = await h.request('PATCH', `/Users/${unlinked.scim_id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'Twin' }] });
    expect(again).toMatchObject({ status: 200, json: { externalId: 'E-TWIN', title: 'Twin' } });
    expect(stored.some((r) => r.user_name.startsWith('single'))).toBe(true);
    await h.settled();
  });

  it('serves discovery: ServiceProviderConfig, ResourceTypes, Schemas', async () => {
    const config = await h.request('GET', '/ServiceProviderConfig');
    expect(config.json).toMatchObject({ patch: { supported: true }, filter: { supported: true }, bulk: { supported: false } });
    const types = await h.request('GET', '/ResourceTypes');
    expect(types.json.Resources.map((r: { id: string }) => r.id)).toEqual(['User', 'Group']);
    const schemas = await h.request('GET', '/Schemas');
    expect(schemas.json.Resources.map((r: { id: string }) => r.id)).toEqual([USER, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User', 'urn:ietf:params:scim:schemas:core:2.0:Group']);
    expect((await h.request('GET', `/Schemas/${USER}`)).json.attributes.find((a: { name: string }) => a.name === 'userName')).toMatchObject({ required: true, uniqueness: 'server' });
  });

  it('routes paths whatever their case, a trailing or doubled slash; a path parameter keeps its case', async () => {
    for (const path of ['/users?count=1', '/USERS?count=1', '/Users/?count=1', '//Users?count=1', '/GROUPS']) {
      const answer = await h.request('GET', path);
      expect(answer, path).toMatchObject({ status: 200, json: { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'] } });
    }
    expect((await h.request('GET', '/serviceconfiguration')).json).toEqual((await h.request('GET', '/ServiceProviderConfig')).json);
    expect((await h.request('GET', `/schemas/${USER}`)).json.id).toBe(USER);
    // The id as sent, not lowered by the router: no schema has it.
    const upper = await h.request('GET', `/SCHEMAS/${USER.toUpperCase()}`);
    expect(upper).toEqual({ status: 404, json: { schemas: [ERROR], status: '404', detail: `no schema ${USER.toUpperCase()}` } });
  });

  it('405 with Allow for a method a known path does not serve, its body unread; 404 for a path that names no endpoint', async () => {
    const created = await h.request('POST', '/Users', user('allowed'));
    expect(created.status).toBe(201);
    const cases: Array<[string, string, string]> = [
      ['PUT', '/Users', 'GET, POST'],
      ['DELETE', '/groups', 'GET, POST'],
      ['POST', `/Users/${created.json.id}`, 'GET, PUT, PATCH, DELETE'],
      ['OPTIONS', '/Groups/anything', 'GET, PUT, PATCH, DELETE'],
      ['PROPFIND', '/Users', 'GET, POST'],
      ['PATCH', '/ServiceProviderConfig', 'GET'],
      ['POST', '/Schemas', 'GET'],
      ['DELETE', `/ResourceTypes/User`, 'GET'],
    ];
    for (const [method, path, allow] of cases) {
      // Not JSON: a 405 is answered without reading it as JSON.
      const answer = await fetch(`${h.base}${path}`, { method, headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/scim+json' }, body: 'not json' });
      expect({ method, path, status: answer.status, allow: answer.headers.get('allow'), json: await answer.json() }).toEqual({
        method, path, status: 405, allow, json: { schemas: [ERROR], status: '405', detail: `${method} is not supported here; allowed: ${allow}` },
      });
    }
    const head = await fetch(`${h.base}/Users`, { method: 'HEAD', headers: { authorization: `Bearer ${h.token}` } });
    expect([head.status, head.headers.get('allow')]).toEqual([405, 'GET, POST']);

    const endpoints = 'Users, Groups, ServiceProviderConfig, ResourceTypes, Schemas';
    const missing: Array<[string, string, string]> = [
      ['GET', '/Nope', `no such endpoint: /scim/v2/Nope (${endpoints})`],
      ['POST', '/Nope', `no such endpoint: /scim/v2/Nope (${endpoints})`],
      ['GET', '', `no such endpoint: /scim/v2 (${endpoints})`],
      ['GET', `/Users/${created.json.id}/groups`, `no such endpoint: /scim/v2/Users/${created.json.id}/groups`],
      ['PUT', '/Groups/a/b', 'no such endpoint: /scim/v2/Groups/a/b'],
    ];
    for (const [method, path, detail] of missing) {
      const answer = await h.request(method, path, undefined, { raw: method === 'GET' ? undefined : '{"not": json' });
      expect({ method, path, ...answer }).toEqual({ method, path, status: 404, json: { schemas: [ERROR], status: '404', detail } });
    }
    // A body is checked by its route's schema before the resource is looked up: a PATCH that is no PatchOp is 400 even for an unknown id.
    const unknownId = '00000000-0000-4000-8000-000000000000';
    expect(await h.request('PATCH', `/Users/${unknownId}`, { Operations: [] })).toMatchObject({ status: 400, json: { scimType: 'invalidSyntax', detail: expect.stringMatching(/^not a PatchOp: schemas: /) } });
    expect((await h.request('PATCH', `/Users/${unknownId}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'x' }] })).status).toBe(404);
    const outside = await fetch(new URL('/scim/v1/Users', h.base), { headers: { authorization: `Bearer ${h.token}` } });
    expect([outside.status, await outside.json()]).toEqual([404, { schemas: [ERROR], status: '404', detail: 'not found: SCIM is served under /scim/v2' }]);
    expect((await h.request('DELETE', `/Users/${created.json.id}`)).status).toBe(204);
  });

  it('the token is configured by value or by file, at least 20 characters, and never echoed in a config error', () => {
    expect(() => loadConfig({ TRAINSYNC_SCIM_TOKEN: 'too-short-secret' })).toThrow(/TRAINSYNC_SCIM_TOKEN: set but invalid; expected at least 20 characters/);
    expect(() => loadConfig({ TRAINSYNC_SCIM_TOKEN: 'too-short-secret' })).not.toThrow(/too-short-secret/);
    expect(() => loadConfig({ TRAINSYNC_SCIM_TOKEN_FILE: '/nonexistent/scim-token' })).toThrow(/TRAINSYNC_SCIM_TOKEN_FILE: set but invalid; expected a readable file/);
    const dir = mkdtempSync(join(tmpdir(), 'scim-token-'));
    try {
      writeFileSync(join(dir, 'token'), `${h.token}\n`);
      expect(loadConfig({ TRAINSYNC_SCIM_TOKEN_FILE: join(dir, 'token') }).TRAINSYNC_SCIM_TOKEN_FILE?.toString()).toBe(h.token);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
