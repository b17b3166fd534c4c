import { owner } from './helpers/owner.ts';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scimQuarantineSection } from '../src/commands/status/scim-quarantine-status.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { MAX_JSON_DEPTH } from '../src/scim/json-limits.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { findUser, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { consoleSession, visible } from './helpers/console-http.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * An identity provider's bad input fails alone and loudly: every attribute the mapping reads
 * is checked before the 2xx (a 400 invalidValue naming it), values the store cannot keep (NUL,
 * lone surrogates, nesting past the limit) are 400s, paging never 500s, a create beside a bad
 * one is never held or failed by it, and a User that still cannot be planned after its 2xx
 * is quarantined where an operator sees it, never blocking another.
 */

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const OPERATOR = { name: 'olga', password: 'hostile-pass-1234' };
let h: ScimHarness;
let consoleServer: ConsoleServer;

beforeAll(async () => {
  const hash = await hashConsolePassword(OPERATOR.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createScimHarness({ simulator: { seed: 41 }, env: { TRAINSYNC_CONSOLE_USERS: `${OPERATOR.name}:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0' } });
  consoleServer = (await startConsole({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: () => { throw new Error('not used here'); } }))!;
});
afterAll(async () => {
  await consoleServer?.close();
  await h?.close();
});

const email = (name: string): string => `${name}${ORG_EMAIL_DOMAIN}`;
const valid = (name: string, extra: Record<string, unknown> = {}) => ({ schemas: [USER], userName: email(name), name: { givenName: 'Val', familyName: 'Id' }, active: true, ...extra });

/** How many live Users have this userName (a refused create stores none). */
async function stored(userName: string): Promise<number> {
  const { n } = await owner(h.app).db.selectFrom('trainsync.scim_users').select(sql<number>`count(*)::int`.as('n')).where(sql<string>`lower(user_name)`, '=', userName.toLowerCase()).executeTakeFirstOrThrow();
  return n;
}

describe('every attribute the mapping reads is checked at intake', () => {
  it('a create with title as an object is 400 invalidValue naming title; nothing is stored', async () => {
    const answer = await h.request('POST', '/Users', valid('hostile.title', { title: { text: 'Engineer' } }));
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({ scimType: 'invalidValue', status: '400' });
    expect(answer.json.detail).toMatch(/^title: /);
    expect(await stored(email('hostile.title'))).toBe(0);
  });

  it("a PATCH that makes the enterprise department an array is 400 naming it; the User keeps its department", async () => {
    const created = await h.request('POST', '/Users', valid('hostile.dept', { [ENTERPRISE]: { department: 'Sales' } }));
    expect(created.status).toBe(201);
    const patched = await h.request('PATCH', `/Users/${created.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: `${ENTERPRISE}:department`, value: ['Sales', 'Ops'] }] });
    expect(patched.status).toBe(400);
    expect(patched.json.scimType).toBe('invalidValue');
    expect(patched.json.detail).toContain(`${ENTERPRISE}:department`);
    expect((await h.request('GET', `/Users/${created.json.id}`)).json[ENTERPRISE]).toEqual({ department: 'Sales' });
  });

  it('wrong types of the other mapped attributes are 400s naming each', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: { givenName: ['Ann'], familyName: 'X' } }, 'name.givenName'],
      [{ externalId: { id: 1 } }, 'externalId'],
      [{ emails: 'ann@example.com' }, 'emails'],
      [{ emails: [{ value: { v: 1 }, type: 'work' }] }, 'emails[0].value'],
      [{ active: 'maybe' }, 'active'],
      [{ [ENTERPRISE]: { manager: 7 } }, `${ENTERPRISE}:manager`],
      [{ [ENTERPRISE]: { employeeNumber: 'E'.repeat(300) } }, `${ENTERPRISE}:employeeNumber`],
      [{ schemas: USER }, 'schemas'],
    ];
    for (const [extra, attribute] of cases) {
      const answer = await h.request('POST', '/Users', valid(`hostile.kind.${randomUUID().slice(0, 8)}`, extra));
      expect(answer.status, attribute).toBe(400);
      expect(answer.json.scimType, attribute).toBe('invalidValue');
      expect(answer.json.detail.startsWith(`${attribute}: `), `${attribute}: ${answer.json.detail}`).toBe(true);
    }
    // A userName too long for the store's index: 400, never the database's 500.
    const long = await h.request('POST', '/Users', valid('x', { userName: `${'a'.repeat(3000)}${ORG_EMAIL_DOMAIN}` }));
    expect(long.status).toBe(400);
    expect(long.json.detail).toMatch(/^userName: /);
  });
});

describe('values the store cannot keep are 400s, and never fail the creates beside them', () => {
  it('NUL, a lone surrogate (in a value or a name) and nesting past the limit: 400; 20 valid creates sent with them all 201 and reach the platform', async () => {
    let deep: unknown = 'x';
    for (let i = 0; i < MAX_JSON_DEPTH + 2; i += 1) deep = { deeper: deep };
    const bad = [
      { body: valid('hostile.nul', { displayName: 'a\u0000b' }), scimType: 'invalidValue', names: 'displayName' },
      { body: valid('hostile.surrogate', { title: 'x\ud800y' }), scimType: 'invalidValue', names: 'title' },
      { body: { ...valid('hostile.key'), ['k\udc00']: 1 }, scimType: 'invalidValue', names: 'attribute name' },
      { body: valid('hostile.deep', { addresses: [deep] }), scimType: 'invalidSyntax', names: `${MAX_JSON_DEPTH} levels` },
    ];
    const good = Array.from({ length: 20 }, (_, i) => valid(`beside.${i}`));
    // All at once: the bad ones land in the same batches as the good ones.
    const answers = await Promise.all([...bad.map((b) => h.request('POST', '/Users', b.body)), ...good.map((g) => h.request('POST', '/Users', g))]);
    bad.forEach((b, i) => {
      expect(answers[i]!.status, b.body.userName).toBe(400);
      expect(answers[i]!.json.scimType, b.body.userName).toBe(b.scimType);
      expect(answers[i]!.json.detail, b.body.userName).toContain(b.names);
    });
    expect(answers.slice(bad.length).map((a) => a.status)).toEqual(good.map(() => 201));
    await h.settled();
    for (const g of good) expect(findUser(h.sim.state, g.userName), g.userName).toBeDefined();
  });

  it('a PATCH holding a NUL is 400 and changes nothing', async () => {
    const created = await h.request('POST', '/Users', valid('hostile.patchnul', { title: 'Clerk' }));
    const patched = await h.request('PATCH', `/Users/${created.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'Boss\u0000' }] });
    expect(patched.status).toBe(400);
    expect(patched.json.scimType).toBe('invalidValue');
    expect((await h.request('GET', `/Users/${created.json.id}`)).json.title).toBe('Clerk');
  });

  it('a PATCH replace without a value or path is 400 invalidSyntax, not a failure of the server', async () => {
    const created = await h.request('POST', '/Users', valid('hostile.emptyop'));
    for (const op of [{ op: 'Replace' }, { op: 'add' }]) {
      const patched = await h.request('PATCH', `/Users/${created.json.id}`, { schemas: [PATCH], Operations: [op] });
      expect(patched.status, op.op).toBe(400);
      expect(patched.json.scimType, op.op).toBe('invalidSyntax');
    }
    const scalar = await h.request('PATCH', `/Users/${created.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: 'text' }] });
    expect(scalar.status).toBe(400);
    expect(scalar.json.scimType).toBe('invalidValue');
  });

  it('a filter value with a NUL is 400 invalidFilter, not a failed query', async () => {
    const answer = await h.request('GET', `/Users?filter=${encodeURIComponent('userName eq "a\u0000b"')}`);
    expect(answer.status).toBe(400);
    expect(answer.json.scimType).toBe('invalidFilter');
  });
});

describe('paging as RFC 7644 §3.4.2.4 reads it: never a 500', () => {
  it('a startIndex past any list is an empty page; below 1 reads as 1; a negative count as 0; huge counts as the maximum', async () => {
    const past = await h.request('GET', '/Users?startIndex=100000000000000000000');
    expect(past.status).toBe(200);
    expect(past.json.Resources).toEqual([]);
    expect(past.json.totalResults).toBeGreaterThan(0);
    const below = await h.request('GET', '/Users?startIndex=-3&count=1');
    expect(below.status).toBe(200);
    expect(below.json).toMatchObject({ startIndex: 1, itemsPerPage: 1 });
    const negative = await h.request('GET', '/Users?count=-5');
    expect(negative.status).toBe(200);
    expect(negative.json.itemsPerPage).toBe(0);
    const huge = await h.request('GET', `/Users?count=${'9'.repeat(400)}`);
    expect(huge.status).toBe(200);
    expect(huge.json.itemsPerPage).toBeLessThanOrEqual(200);
    for (const q of ['startIndex=1e20', 'startIndex=1.5', 'count=abc', 'count=-1e400']) {
      const answer = await h.request('GET', `/Users?${q}`);
      expect(answer.status, q).toBe(400);
      expect(answer.json.scimType, q).toBe('invalidValue');
    }
    expect((await h.request('GET', '/Groups?startIndex=100000000000000000000')).status).toBe(200);
  });
});

describe('a User that cannot be planned after its 2xx is quarantined, and blocks no one', () => {
  /** A User as a release before the intake checks stored it: answered 201, its title an object. */
  async function storeUnplannable(name: string): Promise<string> {
    const scimId = randomUUID();
    const resource = { schemas: [USER], userName: email(name), name: { givenName: 'Leg', familyName: 'Acy' }, active: true, title: { text: 'not text' } };
    await sql`insert into trainsync.scim_users (org, scim_id, employee_id, user_name, active, resource, pending, updated_at)
              values ('default', ${scimId}, ${`LEG-${name}`}, ${email(name)}, true, ${JSON.stringify(resource)}::jsonb, true, now() - interval '1 minute')`.execute(owner(h.app).db);
    return scimId;
  }
  const row = async (scimId: string) =>
    owner(h.app).db.selectFrom('trainsync.scim_users').select(['pending', 'quarantined_at', 'quarantine_reason', 'deleted_at']).where('scim_id', '=', scimId).executeTakeFirstOrThrow();

  it('the sweep quarantines it alone: the valid Users beside it reach the platform; status, the console and the metric show it', async () => {
    const bad = await storeUnplannable('legacy.bad');
    const good = Array.from({ length: 5 }, (_, i) => valid(`legacy.beside.${i}`));
    expect((await Promise.all(good.map((g) => h.request('POST', '/Users', g)))).map((a) => a.status)).toEqual(good.map(() => 201));
    await h.settled();
    for (const g of good) expect(findUser(h.sim.state, g.userName), g.userName).toBeDefined();
    const quarantined = await row(bad);
    expect(quarantined.pending).toBe(false);
    expect(quarantined.quarantined_at).not.toBeNull();
    expect(quarantined.quarantine_reason).toContain('title');
    expect(findUser(h.sim.state, email('legacy.bad'))).toBeUndefined();

    const section = await scimQuarantineSection(h.app, 'default');
    expect(section.rows).toEqual([expect.objectContaining({ id: bad, userName: email('legacy.bad'), deleted: 'no', reason: expect.stringContaining('title') })]);
    const metrics = await h.app.metrics.registry.metrics();
    expect(metrics).toMatch(/^trainsync_scim_quarantined_total\{org="default"\} 1$/m);
    const session = await consoleSession(`http://127.0.0.1:${consoleServer.port}`, OPERATOR);
    const page = await session.get('/provisioning');
    expect(page.status).toBe(200);
    expect(visible(/<section id="scim-quarantine">[\s\S]*?<\/section>/.exec(page.text)?.[0] ?? '')).toContain(email('legacy.bad'));
  });

  it('a PUT from the identity provider frees it: planned, and the account is created', async () => {
    const { scim_id: bad } = await owner(h.app).db.selectFrom('trainsync.scim_users').select('scim_id').where('user_name', '=', email('legacy.bad')).executeTakeFirstOrThrow();
    const put = await h.request('PUT', `/Users/${bad}`, valid('legacy.bad', { title: 'Fixed' }));
    expect(put.status).toBe(200);
    await h.settled();
    expect(await row(bad)).toMatchObject({ pending: false, quarantined_at: null, quarantine_reason: null });
    expect(findUser(h.sim.state, email('legacy.bad'))).toBeDefined();
  });

  it('a DELETE of an unplannable User leaves nothing pending for it', async () => {
    const bad = await storeUnplannable('legacy.leaver');
    expect((await h.request('DELETE', `/Users/${bad}`)).status).toBe(204);
    await h.settled();
    const after = await row(bad);
    expect(after.pending).toBe(false);
    expect(after.deleted_at).not.toBeNull();
    expect((await h.request('GET', `/Users/${bad}`)).status).toBe(404);
  });
});
