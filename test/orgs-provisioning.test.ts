import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { provisionDeps } from '../src/commands/provision-deps.ts';
import { loadConfig, type Config } from '../src/config.ts';
import { provisionFeed, type ProvisionResult } from '../src/provisioning/provision-feed.ts';
import { approveHeldPlan, rejectHeldPlan } from '../src/provisioning/approve-held-plan.ts';
import { listHeldPlans } from '../src/provisioning/held-plans.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';
import type { WorkerHandle } from '../src/queue/worker.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { heldActions } from '../src/scim/held.ts';
import { startScimService, type ScimService } from '../src/scim/service.ts';
import { findUser, FOREIGN_EMAIL_DOMAIN, ORG_EMAIL_DOMAIN, startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, withAdmin, type TestDatabase } from './helpers/db.ts';
import { feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * Two organisations in one warehouse, each its own simulator (its own key) with the SAME
 * seed: the same user GUIDs, e-mails and employee ids on both, exactly the overlap the
 * per-organisation keys must survive. A person listed by both is one platform account in
 * two organisations; their access is per organisation.
 */

const SEED = 7;
let north: RunningSimulator;
let south: RunningSimulator;
let database: TestDatabase;
let prefix: string;
let dir: string;
let env: Record<string, string>;
let config: Config;
let app: App;
let worker: WorkerHandle;
let scim: ScimService;
let files: ReturnType<typeof feedDir>;
const northReader = `trainsync_test_north_${randomBytes(4).toString('hex')}`;
const tokens = { north: randomBytes(24).toString('hex'), south: randomBytes(24).toString('hex') };

beforeAll(async () => {
  north = await startSimulator({ seed: SEED, apiKey: `north-${randomBytes(8).toString('hex')}`, sizes: { users: 12, groups: 3, courses: 3, results: 5 } });
  south = await startSimulator({ seed: SEED, apiKey: `south-${randomBytes(8).toString('hex')}`, sizes: { users: 12, groups: 3, courses: 3, results: 5 } });
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-orgs-'));
  const orgsFile = path.join(dir, 'orgs.json');
  writeFileSync(
    orgsFile,
    JSON.stringify({
      organisations: [
        // North's BI login sees North's rows only: a reader role of its own (a name of this run's, roles are cluster-wide).
        { slug: 'north', name: 'North', apiUrl: north.url, apiKey: { env: 'NORTH_KEY' }, scimToken: { env: 'NORTH_SCIM' }, reader: northReader },
        // South's HR export is the semicolon one: its default profile reads it without --profile.
        { slug: 'south', name: 'South', apiUrl: south.url, apiKey: { env: 'SOUTH_KEY' }, scimToken: { env: 'SOUTH_SCIM' }, feedProfile: path.resolve('examples/semicolon-profile.json') },
      ],
    }),
  );
  env = {
    DATABASE_URL: database.url,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_ORGS_FILE: orgsFile,
    NORTH_KEY: north.apiKey,
    SOUTH_KEY: south.apiKey,
    NORTH_SCIM: tokens.north,
    SOUTH_SCIM: tokens.south,
    TRAINSYNC_REQUESTS_PER_SECOND: '2000',
    TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_SCIM_PORT: '0',
    TRAINSYNC_SCIM_HOST: '127.0.0.1',
    TRAINSYNC_SCIM_SWEEP_MS: '200',
    // One SCIM deactivation per organisation per hour: the guard counts each organisation's own.
    TRAINSYNC_SCIM_MAX_DISABLE: '1',
    LOG_LEVEL: 'warn',
  };
  config = loadConfig(env);
  const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  app = await createApp(config, createLogger(config.LOG_LEVEL, sink), { jobs: allJobs, migrate: true });
  worker = await app.queue.startWorkers([PROVISION_QUEUE]);
  scim = (await startScimService({ config, db: app.db, withPgClient: app.withPgClient, queue: app.queue, platform: app.platform, log: app.log }))!;
  files = feedDir();
});

afterAll(async () => {
  await scim?.close();
  await worker?.close();
  await app?.close();
  await north?.close();
  await south?.close();
  await database?.drop();
  await dropPrefix(prefix);
  files?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
  // The reader role is cluster-wide: dropped once its database is gone (it owns nothing).
  await withAdmin((admin) => admin.query(`drop role if exists ${northReader}`)).catch(() => undefined);
});

function provision(org: 'north' | 'south', rows: readonly HrRow[], mode: 'full' | 'delta' = 'full'): Promise<ProvisionResult> {
  const file = files.write(`${org}-${Math.random().toString(36).slice(2)}.csv`, toCsv(rows));
  return provisionFeed(provisionDeps(app, org), { file, mode, dryRun: false, force: false });
}

const joiner = (id: string, email: string): HrRow => ({ employee_id: id, email, first_name: 'Jo', last_name: `Joiner ${id}`, status: 'active', groups: [], role: 'USER', organisation_identifier: id });

async function identities(org: string): Promise<Map<string, { email: string; platform_user_id: string | null; active: boolean }>> {
  const rows = await app.db.selectFrom('trainsync.identities').select(['employee_id', 'email', 'platform_user_id', 'active']).where('org', '=', org).execute();
  return new Map(rows.map((r) => [r.employee_id, r]));
}

describe('provisioning per organisation', () => {
  it('the same employee id in both feeds provisions each in its own organisation', async () => {
    const northRows = rowsFromState(north.state);
    const southRows = rowsFromState(south.state);
    // Same seed: both organisations list the same people under the same ids.
    expect(northRows.map((r) => r.employee_id)).toEqual(southRows.map((r) => r.employee_id));
    const northJoiner = joiner('J001', `north.j001${ORG_EMAIL_DOMAIN}`);
    const southJoiner = joiner('J001', `south.j001${ORG_EMAIL_DOMAIN}`);

    const n = await provision('north', [...northRows, northJoiner]);
    const s = await provision('south', [...southRows, southJoiner]);
    // Each first run adopts its own organisation's accounts (the same GUIDs: once per organisation).
    expect(n.adopted).toBe(northRows.length);
    expect(s.adopted).toBe(southRows.length);
    expect(n.plan.counts['create-user']).toBe(1);
    expect(s.plan.counts['create-user']).toBe(1);
    expect(n.applied!.audit.every((r) => r.status === 'succeeded')).toBe(true);
    expect(s.applied!.audit.every((r) => r.status === 'succeeded')).toBe(true);

    // Each joiner exists only on its organisation's platform.
    expect(findUser(north.state, northJoiner.email)).toBeDefined();
    expect(findUser(north.state, southJoiner.email)).toBeUndefined();
    expect(findUser(south.state, southJoiner.email)).toBeDefined();
    expect(findUser(south.state, northJoiner.email)).toBeUndefined();

    // One identity and one employee per (org, employee id).
    const [ni, si] = [await identities('north'), await identities('south')];
    expect(ni.get('J001')).toMatchObject({ email: northJoiner.email, platform_user_id: findUser(north.state, northJoiner.email)!.id });
    expect(si.get('J001')).toMatchObject({ email: southJoiner.email, platform_user_id: findUser(south.state, southJoiner.email)!.id });
    const shared = northRows[0]!.employee_id;
    expect(ni.get(shared)!.platform_user_id).toBe(si.get(shared)!.platform_user_id);
    const employees = await app.db.selectFrom('training.employees').select(['org', 'email']).where('employee_id', '=', 'J001').orderBy('org').execute();
    expect(employees).toEqual([
      { org: 'north', email: northJoiner.email },
      { org: 'south', email: southJoiner.email },
    ]);

    // The audit rows carry their organisation; the create's id is the same text in both, once per organisation.
    const creates = await app.db.selectFrom('trainsync.provisioning_audit').select(['org', 'action_id', 'email', 'feed_path']).where('kind', '=', 'create-user').orderBy('org').execute();
    expect(creates.map((c) => [c.org, c.email])).toEqual([
      ['north', northJoiner.email],
      ['south', southJoiner.email],
    ]);
    expect(creates[0]!.feed_path).toContain('north-');
    expect(creates[1]!.feed_path).toContain('south-');
    const feeds = await app.db.selectFrom('trainsync.feeds').select(['org']).orderBy('id').execute();
    expect(feeds.map((f) => f.org)).toEqual(['north', 'south']);
  });

  it('a leaver in one organisation loses access there only: the account both list keeps the other organisation\'s access', async () => {
    const northRows = rowsFromState(north.state).filter((r) => r.employee_id !== 'J001');
    const person = northRows.find((r) => r.status === 'active')!;
    // The same person (same e-mail, same GUID) is listed by both organisations' GET users.
    const inNorth = findUser(north.state, person.email)!;
    const inSouth = findUser(south.state, person.email)!;
    expect(inNorth.id).toBe(inSouth.id);
    expect(inSouth.hasAccess).toBe(true);

    const southWritesBefore = south.requests.filter((r) => r.method !== 'GET').length;
    const leaverFeed = [...northRows.map((r) => (r.employee_id === person.employee_id ? { ...r, status: 'terminated' } : r)), joiner('J001', `north.j001${ORG_EMAIL_DOMAIN}`)];
    const n = await provision('north', leaverFeed);
    expect(n.plan.counts.disable).toBe(1);
    expect(n.applied!.audit.map((r) => [r.kind, r.employeeId, r.status])).toEqual([['disable', person.employee_id, 'succeeded']]);

    expect(findUser(north.state, person.email)!.hasAccess).toBe(false);
    expect(findUser(south.state, person.email)!.hasAccess).toBe(true);
    expect(south.requests.filter((r) => r.method !== 'GET').length).toBe(southWritesBefore);
    expect((await identities('north')).get(person.employee_id)!.active).toBe(false);
    expect((await identities('south')).get(person.employee_id)!.active).toBe(true);

    // South's unchanged feed plans nothing for them: its own applied state and platform say active.
    const s = await provision('south', [...rowsFromState(south.state).filter((r) => r.employee_id !== 'J001'), joiner('J001', `south.j001${ORG_EMAIL_DOMAIN}`)]);
    expect(s.plan.actions).toEqual([]);
    expect(findUser(south.state, person.email)!.hasAccess).toBe(true);

    const disables = await app.db.selectFrom('trainsync.provisioning_actions').select(['org', 'employee_id']).where('kind', '=', 'disable').execute();
    expect(disables).toEqual([{ org: 'north', employee_id: person.employee_id }]);
  });

  it("a plan the disable guard holds is its organisation's: another organisation cannot approve it", async () => {
    // North's feed lists three people: the rest would be disabled, past the limit: held, nothing applied.
    const rows = rowsFromState(north.state).filter((r) => r.status === 'active').slice(0, 3);
    const held = await provision('north', rows);
    expect(held.plan.refused?.reason).toBe('max-disable');
    expect(held.heldPlanId).toBeDefined();
    const id = held.heldPlanId!;
    expect((await listHeldPlans(app.db, { org: 'north', onlyHeld: true })).map((p) => [p.id, p.org])).toEqual([[id, 'north']]);
    expect(await listHeldPlans(app.db, { org: 'south', onlyHeld: true })).toEqual([]);
    const decider = { by: 'tester', role: 'operator' };
    const across = await approveHeldPlan({ ...provisionDeps(app, 'south') }, id, decider);
    expect(across).toEqual({ ok: false, reason: `plan #${id} is organisation north's, not south's` });
    expect((await rejectHeldPlan(provisionDeps(app, 'south'), id, decider)).ok).toBe(false);
    expect((await rejectHeldPlan(provisionDeps(app, 'north'), id, decider)).ok).toBe(true);
    expect(north.state.users.filter((u) => u.hasAccess).length).toBeGreaterThan(3);
  });

  it('reconcile reports each organisation on its own; --org is required with two', async () => {
    // South's feed asks for an account the platform refuses (another organisation's e-mail): a pending action, south's only.
    const southRows = [...rowsFromState(south.state).filter((r) => r.employee_id !== 'J001'), joiner('J001', `south.j001${ORG_EMAIL_DOMAIN}`), joiner('J404', `j404${FOREIGN_EMAIL_DOMAIN}`)];
    const s = await provision('south', southRows);
    expect(s.applied!.audit.map((r) => [r.employeeId, r.status])).toEqual([['J404', 'failed']]);
    // North's platform accounts as a users sync would store them, plus one no employee lists.
    for (const u of north.state.users) {
      await sql`insert into training.users (org, user_id, email, first_name, last_name, role, organisation_identifier, has_access, first_seen_at, last_seen_at, updated_at)
                values ('north', ${u.id}::uuid, ${u.email}, ${u.firstName}, ${u.lastName}, ${u.role}, ${u.organisationIdentifier ?? null}, ${u.hasAccess}, now(), now(), now())`.execute(app.db);
    }
    const stray = 'e6f7a1b2-0000-4000-8000-000000000001';
    await sql`insert into training.users (org, user_id, email, first_name, last_name, role, organisation_identifier, has_access, first_seen_at, last_seen_at, updated_at)
              values ('north', ${stray}::uuid, ${`stray${ORG_EMAIL_DOMAIN}`}, 'Stray', 'Account', 'USER', null, true, now(), now(), now())`.execute(app.db);

    const cliEnv = { ...env, LOG_LEVEL: 'error' };
    const ambiguous = await runCli(['reconcile'], cliEnv);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/north, south/);

    const run = await runCli(['reconcile', '--org', 'all', '--json'], cliEnv);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const { organisations } = JSON.parse(run.stdout) as { organisations: Array<{ org: string; counts: Record<string, number>; examples: Record<string, Array<{ email: string; user_id: string | null }>> }> };
    expect(organisations.map((o) => o.org)).toEqual(['north', 'south']);
    const [n, so] = organisations as [(typeof organisations)[number], (typeof organisations)[number]];
    expect(n.counts).toMatchObject({ account_without_employee: 1, leaver_with_access: 0, pending_action: 0 });
    expect(n.examples.account_without_employee!.map((e) => e.user_id)).toEqual([stray]);
    expect(so.counts).toMatchObject({ account_without_employee: 0, pending_action: 1 });
    expect(so.examples.pending_action!.map((e) => e.email)).toEqual([`j404${FOREIGN_EMAIL_DOMAIN}`]);

    // North's reader: North's discrepancies and employees only, through the same view.
    const client = await database.pool.connect();
    try {
      await client.query('begin');
      await client.query(`set local role ${northReader}`);
      const seen = await client.query<{ org: string; kind: string }>('select org, kind from training.hr_reconciliation');
      expect(seen.rows.length).toBeGreaterThan(0);
      expect(new Set(seen.rows.map((r) => r.org))).toEqual(new Set(['north']));
      const employees = await client.query<{ org: string }>('select distinct org from training.employees');
      expect(employees.rows).toEqual([{ org: 'north' }]);
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }

    const one = await runCli(['reconcile', '--org', 'south'], cliEnv);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/pending_action\s*│\s*1\s/);
    expect(one.stdout).not.toMatch(/stray/);
    // South's accounts were never synced, North's were: said of South alone.
    expect(one.stdout).toContain('training.users has no row of south');

    const feedless = await runCli(['provision', files.write('x.csv', toCsv(southRows)), '--dry-run'], cliEnv);
    expect(feedless.code).toBe(2);
    expect(feedless.stderr).toMatch(/--org/);
  });
});

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
        const { pending } = await app.db.selectFrom('trainsync.scim_users').select(sql<number>`count(*)::int`.as('pending')).where('pending', '=', true).executeTakeFirstOrThrow();
        const { open } = await app.db.selectFrom('trainsync.provisioning_actions').select(sql<number>`count(*)::int`.as('open')).where('status', 'in', ['planned', 'queued']).executeTakeFirstOrThrow();
        return pending === 0 && open === 0 ? true : undefined;
      },
      30_000,
      'SCIM changes planned and their actions finished',
    );
  }

  it("a token of one organisation is refused on the other's path; on its own it creates in its organisation only", async () => {
    expect(scim.orgs).toEqual(['north', 'south']);
    const email = `scim.sam${ORG_EMAIL_DOMAIN}`;
    const refused = await request('POST', '/south/Users', tokens.north, user(email, 'S100'));
    expect(refused.status).toBe(401);
    expect(refused.json.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
    expect((await request('GET', '/south/Users', tokens.north)).status).toBe(401);
    // No `default` organisation here: the path without a slug serves nobody.
    expect((await request('GET', '/Users', tokens.north)).status).toBe(404);
    expect((await request('GET', '/east/Users', tokens.north)).status).toBe(404);
    // A malformed escape in the path is a 404, and the endpoint keeps serving.
    expect((await request('GET', '/north/Users/%E0%A4%A', tokens.north)).status).toBe(404);

    const created = await request('POST', '/north/Users', tokens.north, user(email, 'S100'));
    expect(created.status).toBe(201);
    expect(created.json.meta.location).toBe(`${base()}/north/Users/${created.json.id}`);
    await settled();
    expect(findUser(north.state, email)).toMatchObject({ hasAccess: true });
    expect(findUser(south.state, email)).toBeUndefined();

    // South does not see north's User, by id or by filter; and may create its own of the same userName.
    expect((await request('GET', `/south/Users/${created.json.id}`, tokens.south)).status).toBe(404);
    const search = await request('GET', `/south/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}`, tokens.south);
    expect(search.json.totalResults).toBe(0);
    const northSearch = await request('GET', `/north/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}`, tokens.north);
    expect(northSearch.json.totalResults).toBe(1);

    const rows = await app.db.selectFrom('trainsync.scim_users').select(['org', 'employee_id']).execute();
    expect(rows).toEqual([{ org: 'north', employee_id: 'S100' }]);
    const audit = await app.db.selectFrom('trainsync.provisioning_actions').select(['org', 'kind', 'status']).where('employee_id', '=', 'S100').execute();
    expect(audit).toEqual([{ org: 'north', kind: 'create-user', status: 'succeeded' }]);
    const employee = await app.db.selectFrom('training.employees').select(['org']).where('employee_id', '=', 'S100').execute();
    expect(employee).toEqual([{ org: 'north' }]);

    // South's own User with the same userName and employee id: its own row, its own account.
    const theirs = await request('POST', '/south/Users', tokens.south, user(email, 'S100'));
    expect(theirs.status).toBe(201);
    await settled();
    expect(findUser(south.state, email)).toMatchObject({ hasAccess: true });
    const both = await app.db.selectFrom('trainsync.scim_users').select(['org']).where('employee_id', '=', 'S100').orderBy('org').execute();
    expect(both).toEqual([{ org: 'north' }, { org: 'south' }]);

    // A deactivation through south's path leaves north's account alone.
    const off = await request('PATCH', `/south/Users/${theirs.json.id}`, tokens.south, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(off.status).toBe(200);
    await settled();
    expect(findUser(south.state, email)!.hasAccess).toBe(false);
    expect(findUser(north.state, email)!.hasAccess).toBe(true);

    // The guard's hour is per organisation: south's deactivation spent south's allowance only.
    const patchOff = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', value: { active: false } }] };
    expect((await request('PATCH', `/north/Users/${created.json.id}`, tokens.north, patchOff)).status).toBe(200);
    await settled();
    expect(findUser(north.state, email)!.hasAccess).toBe(false);
    expect(await heldActions(app.db, 'north')).toEqual([]);
    const second = await request('POST', '/north/Users', tokens.north, user(`scim.sue${ORG_EMAIL_DOMAIN}`, 'S101'));
    await settled();
    expect((await request('PATCH', `/north/Users/${second.json.id}`, tokens.north, patchOff)).status).toBe(200);
    await settled();
    expect((await heldActions(app.db, 'north')).map((h) => [h.org, h.employeeId])).toEqual([['north', 'S101']]);
    expect(await heldActions(app.db, 'south')).toEqual([]);
    expect(findUser(north.state, `scim.sue${ORG_EMAIL_DOMAIN}`)!.hasAccess).toBe(true);
  });
});

describe('HR feeds per organisation', () => {
  it("load-feed --org takes the organisation's default feed profile and touches its employees only", async () => {
    const cliEnv = { ...env, LOG_LEVEL: 'error' };
    const northBefore = await app.db.selectFrom('training.employees').select(['employee_id', 'updated_at']).where('org', '=', 'north').orderBy('employee_id').execute();
    const run = await runCli(['load-feed', 'examples/semicolon-export.csv', '--org', 'south', '--mode', 'delta'], cliEnv);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('12 listed: 12 joined');
    const p2003 = await app.db.selectFrom('training.employees').select(['org', 'status', 'attributes']).where('employee_id', '=', 'P2003').execute();
    expect(p2003).toEqual([{ org: 'south', status: 'inactive', attributes: expect.objectContaining({ department: 'Logistiek' }) }]);
    const northAfter = await app.db.selectFrom('training.employees').select(['employee_id', 'updated_at']).where('org', '=', 'north').orderBy('employee_id').execute();
    expect(northAfter).toEqual(northBefore);

    // Several organisations and none named: refused, naming them.
    const ambiguous = await runCli(['load-feed', 'examples/semicolon-export.csv', '--mode', 'delta'], cliEnv);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/north, south/);
  });
});
