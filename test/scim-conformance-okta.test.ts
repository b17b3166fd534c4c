import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * Okta's "SCIM 2.0 SPEC Test" (the Runscope suite Okta's SCIM guide links, Okta-SCIM-20-SPEC-Test.json
 * in okta/okta-developer-docs, with its Initial_Script_Spec variables): the same requests, with the
 * same headers, in the same order, each `it` named after the suite's step and asserting that
 * step's Runscope assertions, against the worker's real SCIM endpoint. Written from the suite, not
 * copied. The one assertion not made here is step 10's `response_time is_less_than 600`: tests
 * never judge by the clock (docs/scim.md, "Conformance"; the bench measures it).
 */

let h: ScimHarness;

/** The suite's Initial Script: random names, an e-mail as userName, an id that exists nowhere. */
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 10)).join('');
const randomGivenName = `Runscope${digits(3)}`;
const randomFamilyName = `H${Array.from({ length: 8 }, () => 'abcdefghijklmnopqrstuvwxyz'[Math.floor(Math.random() * 26)]).join('')}${digits(3)}`;
const randomEmail = `${randomGivenName}${randomFamilyName}@atko.com`;
const randomUsername = randomEmail;
const randomUsernameCaps = randomEmail.toUpperCase();
const InvalidUserEmail = 'abcdefgh@atko.com';
const UserIdThatDoesNotExist = '010101001010101011001010101011';
const vars: Record<string, string> = {};

interface Answer {
  status: number;
  json: any;
}

/** A Runscope request: the suite's headers (`{{auth}}` is "Bearer <token>"), the URL as Runscope encodes it. */
async function step(method: string, path: string, options: { body?: string; auth?: string; json?: boolean } = {}): Promise<Answer> {
  const headers: Record<string, string> = options.json
    ? { 'Content-Type': 'application/json', Authorization: options.auth ?? `Bearer ${h.token}`, Accept: 'application/scim+json; charset=utf-8' }
    : { 'Accept-Charset': 'utf-8', 'Content-Type': 'application/scim+json; charset=utf-8', Accept: 'application/scim+json', Authorization: options.auth ?? `Bearer ${h.token}`, 'User-Agent': 'OKTA SCIM Integration' };
  const response = await fetch(encodeURI(`${h.base}${path}`), { method, headers, ...(options.body === undefined ? {} : { body: options.body }) });
  const text = await response.text();
  h.transcript.push(`> ${method} ${path}${options.body ? `\n${options.body}` : ''}\n< ${response.status}\n${text}\n`);
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

/** A Runscope property path: `Resources[0].name.familyName`. */
function property(json: unknown, path: string): unknown {
  return path.split(/\.|\[(\d+)\]/).filter((p) => p !== undefined && p !== '').reduce<unknown>((value, key) => (value === null || typeof value !== 'object' ? undefined : (value as Record<string, unknown>)[key]), json);
}
const notEmpty = (json: unknown, path: string) => {
  const value = property(json, path);
  expect(value, `not_empty ${path}`).not.toBeUndefined();
  expect(value, `not_empty ${path}`).not.toBeNull();
  expect(value, `not_empty ${path}`).not.toBe('');
  if (Array.isArray(value)) expect(value.length, `not_empty ${path}`).toBeGreaterThan(0);
};
const isNumber = (json: unknown, path: string) => expect(typeof property(json, path), `is_a_number ${path}`).toBe('number');
const equal = (json: unknown, path: string, value: string) => expect(String(property(json, path)), `equal ${path}`).toBe(value);
const hasValue = (json: unknown, path: string, value: string) => expect(property(json, path), `has_value ${path}`).toContain(value);
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 41 }, env: { TRAINSYNC_SECRET_KEY: randomBytes(32).toString('hex') } });
  // The suite's precondition ("create at least one user before running"): one, as Okta creates it with "Sync password" on.
  const seeded = await h.request('POST', '/Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: `seed.okta${ORG_EMAIL_DOMAIN}`,
    name: { givenName: 'Seed', familyName: 'Okta' },
    emails: [{ primary: true, value: `seed.okta${ORG_EMAIL_DOMAIN}`, type: 'work' }],
    displayName: 'Seed Okta',
    locale: 'en-US',
    externalId: '00ujl29u0le5T6Aj10h7',
    groups: [],
    password: '1mz050nq',
    active: true,
  });
  if (seeded.status !== 201) throw new Error(`the seed user was not created: ${seeded.status} ${JSON.stringify(seeded.json)}`);
});
afterAll(async () => {
  await h?.close();
});

describe('Okta SCIM 2.0 SPEC Test', () => {
  it('Required Test: Test Users endpoint', async () => {
    const r = await step('GET', '/Users?count=1&startIndex=1');
    expect(r.status).toBe(200);
    notEmpty(r.json, 'Resources');
    hasValue(r.json, 'schemas', LIST);
    for (const p of ['itemsPerPage', 'startIndex', 'totalResults']) isNumber(r.json, p);
    for (const p of ['Resources[0].id', 'Resources[0].name.familyName', 'Resources[0].name.givenName', 'Resources[0].userName', 'Resources[0].active', 'Resources[0].emails[0].value']) notEmpty(r.json, p);
    vars.ISVUserid = String(property(r.json, 'Resources[0].id'));
  });

  it('Required Test: Get Users/{{id}}', async () => {
    const r = await step('GET', `/Users/${vars.ISVUserid}`);
    expect(r.status).toBe(200);
    for (const p of ['id', 'name.familyName', 'name.givenName', 'userName', 'active', 'emails[0].value']) notEmpty(r.json, p);
    equal(r.json, 'id', vars.ISVUserid!);
  });

  it('Required Test: Test invalid User by username', async () => {
    const r = await step('GET', `/Users?filter=userName eq "${InvalidUserEmail}"`);
    expect(r.status).toBe(200);
    hasValue(r.json, 'schemas', LIST);
    equal(r.json, 'totalResults', '0');
  });

  it('Required Test: Test invalid User by ID', async () => {
    const r = await step('GET', `/Users/${UserIdThatDoesNotExist}`);
    expect(r.status).toBe(404);
    notEmpty(r.json, 'detail');
    hasValue(r.json, 'schemas', ERROR);
  });

  it("Required Test: Make sure random user doesn't exist", async () => {
    const r = await step('GET', `/Users?filter=userName eq "${randomEmail}"`);
    expect(r.status).toBe(200);
    expect(property(r.json, 'totalResults'), 'equal_number totalResults').toBe(0);
    hasValue(r.json, 'schemas', LIST);
  });

  it('Required Test: Create Okta user with realistic values', async () => {
    const body = JSON.stringify({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: randomUsername,
      name: { givenName: randomGivenName, familyName: randomFamilyName },
      emails: [{ primary: true, value: randomEmail, type: 'work' }],
      displayName: `${randomGivenName} ${randomFamilyName}`,
      active: true,
    });
    const r = await step('POST', '/Users', { body, json: true });
    expect(r.status).toBe(201);
    equal(r.json, 'active', 'true');
    notEmpty(r.json, 'id');
    equal(r.json, 'name.familyName', randomFamilyName);
    equal(r.json, 'name.givenName', randomGivenName);
    expect(JSON.stringify(property(r.json, 'schemas')), 'contains schemas').toContain('urn:ietf:params:scim:schemas:core:2.0:User');
    equal(r.json, 'userName', randomUsername);
    vars.idUserOne = String(property(r.json, 'id'));
    vars.randomUserEmail = String(property(r.json, 'emails[0].value'));
  });

  it('Required Test: Verify that user was created', async () => {
    const r = await step('GET', `/Users/${vars.idUserOne}`);
    expect(r.status).toBe(200);
    equal(r.json, 'userName', randomUsername);
    equal(r.json, 'name.familyName', randomFamilyName);
    equal(r.json, 'name.givenName', randomGivenName);
  });

  it('Required Test: Expect failure when recreating user with same values', async () => {
    const body = JSON.stringify({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: randomUsername,
      name: { givenName: randomGivenName, familyName: randomFamilyName },
      emails: [{ primary: true, value: randomUsername, type: 'work' }],
      displayName: `${randomGivenName} ${randomFamilyName}`,
      active: true,
    });
    const r = await step('POST', '/Users', { body, json: true });
    expect(r.status).toBe(409);
  });

  it('Required Test: Username Case Sensitivity Check', async () => {
    const r = await step('GET', `/Users?filter=userName eq "${randomUsernameCaps}"`);
    expect(r.status).toBe(200);
    // Beyond the suite: the upper-case userName finds the user created above (userName is caseExact false).
    expect(r.json).toMatchObject({ totalResults: 1, Resources: [{ id: vars.idUserOne }] });
  });

  it('Optional Test: Verify Groups endpoint', async () => {
    const r = await step('GET', '/Groups');
    expect(r.status).toBe(200);
    // The step's script: with groups, Resources is an array.
    expect(r.json.totalResults).toBeGreaterThanOrEqual(1);
    expect(Array.isArray(r.json.Resources)).toBe(true);
  });

  it('Required Test: Check status 401', async () => {
    const r = await step('GET', `/Users?filter=userName eq "${randomUsernameCaps}"`, { auth: 'non-token' });
    expect(r.status).toBe(401);
    notEmpty(r.json, 'detail');
    equal(r.json, 'status', '401');
    hasValue(r.json, 'schemas', ERROR);
  });

  it('Required Test: Check status 404', async () => {
    const r = await step('GET', '/Users/00919288221112222');
    expect(r.status).toBe(404);
    notEmpty(r.json, 'detail');
    equal(r.json, 'status', '404');
    hasValue(r.json, 'schemas', ERROR);
  });
});
