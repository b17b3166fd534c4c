import { owner } from './helpers/owner.ts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getHeldPlan, listHeldPlans } from '../src/provisioning/held-plans.ts';
import type { ScimService } from '../src/scim/service.ts';
import { findUser, ORG_EMAIL_DOMAIN, type RunningSimulator } from '../src/simulator/index.ts';
import type { App } from '../src/runtime/app.ts';
import { createTwoOrgHarness, type TwoOrgHarness } from './helpers/orgs-harness.ts';
import { runCli } from './helpers/cli.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * SCIM with two organisations: one endpoint, a path and a token per organisation
 * (`/scim/v2/<slug>`). A token of one organisation never reaches the other's Users.
 */

let h: TwoOrgHarness;
let north: RunningSimulator;
let south: RunningSimulator;
let app: App;
let scim: ScimService;
let tokens: TwoOrgHarness['tokens'];

beforeAll(async () => {
  // One SCIM deactivation per organisation per hour: the guard counts each organisation's own.
  h = await createTwoOrgHarness({ env: { TRAINSYNC_SCIM_MAX_DISABLE: '1' } });
  ({ app, scim, tokens } = h);
  ({ north, south } = h.sims);
});

afterAll(async () => {
  await h?.close();
});

/** The people the organisation's open held plans hold, as [org, employee id]. */
async function heldPeople(org: string): Promise<Array<[string, string]>> {
  const plans = await listHeldPlans(owner(app).scope(org), { onlyHeld: true });
  const full = await Promise.all(plans.map((p) => getHeldPlan(owner(app).db, p.id)));
  return full.flatMap((p) => p!.people.map((person): [string, string] => [p!.org, person.employeeId]));
}

describe('SCIM per organisation', () => {
  const base = (): string => `http://127.0.0.1:${scim.port}/scim/v2`;
  async function request(method: string, pathname: string, token: string, body?: unknown): Promise<{ status: number; json: any }> {
    const response = await fetch(`${base()}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
  }
  const user = (email: string, id: string) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: email,
    externalId: id,
    name: { givenName: 'Sam', familyName: 'Scim' },
    emails: [{ value: email, primary: true, type: 'work' }],
    active: true,
  });

  async function settled(): Promise<void> {
    await waitFor(
      async () => {
        await scim.idle();
        const { pending } = await owner(app).db.selectFrom('trainsync.scim_users').select(sql<number>`count(*)::int`.as('pending')).where('pending', '=', true).executeTakeFirstOrThrow();
        const { open } = await owner(app).db.selectFrom('trainsync.provisioning_actions').select(sql<number>`count(*)::int`.as('open')).where('status', 'in', ['planned', 'queued']).executeTakeFirstOrThrow();
        return pending === 0 && open === 0 ? true : undefined;
      },
      30_000,
      'SCIM changes planned and their actions finished',
    );
  }

  const email = `scim.sam${ORG_EMAIL_DOMAIN}`;
  const patchOff = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', value: { active: false } }] };
  /** The User north created, and south's of the same userName. */
  const ids = { north: '', south: '' };

  it("a token of one organisation is refused on the other's path; a path names a served organisation", async () => {
    expect(scim.orgs).toEqual(['north', 'south']);
    const refused = await request('POST', '/south/Users', tokens.north, user(email, 'S100'));
    expect(refused.status).toBe(401);
    expect(refused.json.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
    expect((await request('GET', '/south/Users', tokens.north)).status).toBe(401);
    // No `default` organisation here: the path without a slug serves nobody.
    expect((await request('GET', '/Users', tokens.north)).status).toBe(404);
    expect((await request('GET', '/east/Users', tokens.north)).status).toBe(404);
    // A malformed escape in the path is a 404, and the endpoint keeps serving.
    expect((await request('GET', '/north/Users/%E0%A4%A', tokens.north)).status).toBe(404);
  });

  it('an unknown organisation in the path: 401 before 404 without a valid token; a 404 names no other organisation', async () => {
    const anonymous = await fetch(`${base()}/unknown/Users`);
    const anonymousText = await anonymous.text();
    expect(anonymous.status).toBe(401);
    expect(anonymousText).not.toMatch(/north|south/);
    for (const path of ['/unknown/Users', '/Users', '/users', '']) {
      const wrong = await request('GET', path, 'not-a-token');
      expect(wrong.status, path).toBe(401);
      expect(JSON.stringify(wrong.json), path).not.toMatch(/north|south/);
    }
    // North's token: a 404 that names north's own path, never south's.
    for (const path of ['/unknown/Users', '/Users']) {
      const unknown = await request('GET', path, tokens.north);
      expect(unknown.status, path).toBe(404);
      expect(unknown.json.detail, path).toContain('/scim/v2/north');
      expect(unknown.json.detail, path).not.toContain('south');
    }
  });

  it("creates in its own organisation only; the other organisation neither sees the User nor is kept from its own", async () => {
    const created = await request('POST', '/north/Users', tokens.north, user(email, 'S100'));
    expect(created.status).toBe(201);
    expect(created.json.meta.location).toBe(`${base()}/north/Users/${created.json.id}`);
    ids.north = created.json.id;
    await settled();
    expect(findUser(north.state, email)).toMatchObject({ hasAccess: true });
    expect(findUser(south.state, email)).toBeUndefined();

    // South does not see north's User, by id or by filter; and may create its own of the same userName.
    expect((await request('GET', `/south/Users/${created.json.id}`, tokens.south)).status).toBe(404);
    const search = await request('GET', `/south/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}`, tokens.south);
    expect(search.json.totalResults).toBe(0);
    // Nor change it: south's path with north's id answers 404 for PATCH, PUT and DELETE, and north's User stays.
    expect((await request('PATCH', `/south/Users/${created.json.id}`, tokens.south, patchOff)).status).toBe(404);
    expect((await request('PUT', `/south/Users/${created.json.id}`, tokens.south, { ...user(email, 'S100'), active: false })).status).toBe(404);
    expect((await request('DELETE', `/south/Users/${created.json.id}`, tokens.south)).status).toBe(404);
    expect((await request('GET', `/north/Users/${created.json.id}`, tokens.north)).json.active).toBe(true);
    const northSearch = await request('GET', `/north/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}`, tokens.north);
    expect(northSearch.json.totalResults).toBe(1);

    const rows = await owner(app).db.selectFrom('trainsync.scim_users').select(['org', 'employee_id']).execute();
    expect(rows).toEqual([{ org: 'north', employee_id: 'S100' }]);
    const audit = await owner(app).db.selectFrom('trainsync.provisioning_actions').select(['org', 'kind', 'status']).where('employee_id', '=', 'S100').execute();
    expect(audit).toEqual([{ org: 'north', kind: 'create-user', status: 'succeeded' }]);
    const employee = await owner(app).db.selectFrom('training.employees').select(['org']).where('employee_id', '=', 'S100').execute();
    expect(employee).toEqual([{ org: 'north' }]);

    // South's own User with the same userName and employee id: its own row, its own account.
    const theirs = await request('POST', '/south/Users', tokens.south, user(email, 'S100'));
    expect(theirs.status).toBe(201);
    await settled();
    expect(findUser(south.state, email)).toMatchObject({ hasAccess: true });
    const both = await owner(app).db.selectFrom('trainsync.scim_users').select(['org']).where('employee_id', '=', 'S100').orderBy('org').execute();
    expect(both).toEqual([{ org: 'north' }, { org: 'south' }]);
    ids.south = theirs.json.id;
  });

  it("a deactivation through one organisation's path leaves the other's account; the guard counts per organisation", async () => {
    const off = await request('PATCH', `/south/Users/${ids.south}`, tokens.south, patchOff);
    expect(off.status).toBe(200);
    await settled();
    expect(findUser(south.state, email)!.hasAccess).toBe(false);
    expect(findUser(north.state, email)!.hasAccess).toBe(true);

    // The guard's hour is per organisation (limit 1 here): south's deactivation spent south's allowance only.
    expect((await request('PATCH', `/north/Users/${ids.north}`, tokens.north, patchOff)).status).toBe(200);
    await settled();
    expect(findUser(north.state, email)!.hasAccess).toBe(false);
    expect(await heldPeople('north')).toEqual([]);
    const second = await request('POST', '/north/Users', tokens.north, user(`scim.sue${ORG_EMAIL_DOMAIN}`, 'S101'));
    await settled();
    expect((await request('PATCH', `/north/Users/${second.json.id}`, tokens.north, patchOff)).status).toBe(200);
    await settled();
    expect(await heldPeople('north')).toEqual([['north', 'S101']]);
    expect(await heldPeople('south')).toEqual([]);
    expect(findUser(north.state, `scim.sue${ORG_EMAIL_DOMAIN}`)!.hasAccess).toBe(true);
  });

  it('`trainsync held` lists every organisation\'s held plans; status counts them per organisation; a plan is decided in its own', async () => {
    const [plan] = await listHeldPlans(owner(app).scope('north'), { onlyHeld: true });
    const list = await runCli(['held'], h.env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`#${plan!.id}[\\s│]+north[\\s│]+scim[\\s│]+SCIM[\\s│]+1[\\s│]`));
    expect((await runCli(['held', '--org', 'south'], h.env)).stdout).toBe('no held plans (south)\n');
    const status = await runCli(['status'], h.env);
    expect(status.stdout).toMatch(/== Organisation north ==[\s\S]*Held plans: 1 [\s\S]*== Organisation south ==[\s\S]*Held plans: 0 /);
    const elsewhere = await runCli(['held', '--org', 'south', '--approve', String(plan!.id), '--confirm', '1'], h.env);
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(`plan #${plan!.id} is organisation north's: add --org north`);
    expect(findUser(north.state, `scim.sue${ORG_EMAIL_DOMAIN}`)!.hasAccess).toBe(true);
    const approved = await runCli(['held', '--org', 'north', '--approve', String(plan!.id), '--confirm', '1'], h.env);
    expect(approved.code).toBe(0);
    await settled();
    expect(findUser(north.state, `scim.sue${ORG_EMAIL_DOMAIN}`)!.hasAccess).toBe(false);
    expect(await heldPeople('north')).toEqual([]);
  });
});

