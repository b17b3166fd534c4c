import { owner } from './helpers/owner.ts';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { loadConfig } from '../src/config.ts';
import { approveHeldPlan } from '../src/provisioning/approve-held-plan.ts';
import { getHeldPlan, listHeldPlans, type HeldPlan } from '../src/provisioning/held-plans.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { reconcileFix } from '../src/provisioning/reconcile-fix.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';
import type { WorkerHandle } from '../src/queue/worker.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { startScimService, type ScimService } from '../src/scim/service.ts';
import { findUser, ORG_EMAIL_DOMAIN, startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { snapshotEmployees } from '../src/provisioning/employees-store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * One pipeline, three sources. Three organisations in one warehouse, each its own
 * simulator (the same seed) and the same three employees, created through SCIM. Then the
 * same desired change reaches each through another source: an HR feed (`feed-org`), the
 * identity provider over SCIM (`scim-org`), the snapshot and `reconcile --fix`
 * (`fix-org`). The disable limit is 0 everywhere, so a leaver is a mass disable: each
 * source holds the same plan; approved, each applies the same action, with the same audit
 * row but for its source; a returner (no guard) is applied at once, the same way.
 */

const ORGS = ['feed-org', 'scim-org', 'fix-org'] as const;
type Org = (typeof ORGS)[number];
const SOURCE: Record<Org, string> = { 'feed-org': 'feed', 'scim-org': 'scim', 'fix-org': 'reconcile' };
const PEOPLE = ['P0', 'P1', 'P2'];
const email = (id: string): string => `${id.toLowerCase()}.same${ORG_EMAIL_DOMAIN}`;
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

let sims: Record<Org, RunningSimulator>;
let database: TestDatabase;
let prefix: string;
let dir: string;
let app: App;
let worker: WorkerHandle;
let scim: ScimService;
const tokens = Object.fromEntries(ORGS.map((org) => [org, randomBytes(24).toString('hex')])) as Record<Org, string>;
const scimIds = Object.fromEntries(ORGS.map((org) => [org, {} as Record<string, string>])) as Record<Org, Record<string, string>>;

beforeAll(async () => {
  const sizes = { users: 4, groups: 2, courses: 1, results: 2 };
  sims = Object.fromEntries(await Promise.all(ORGS.map(async (org) => [org, await startSimulator({ seed: 5, apiKey: `${org}-${randomBytes(6).toString('hex')}`, sizes })]))) as Record<Org, RunningSimulator>;
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-sources-'));
  const envKey = (org: Org, what: string): string => `${org.replace('-', '_').toUpperCase()}_${what}`;
  const orgsFile = path.join(dir, 'orgs.json');
  writeFileSync(orgsFile, JSON.stringify({
    organisations: ORGS.map((org) => ({ slug: org, name: org, apiUrl: sims[org].url, apiKey: { env: envKey(org, 'KEY') }, scimToken: { env: envKey(org, 'SCIM') } })),
  }));
  const env: Record<string, string> = {
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_ORGS_FILE: orgsFile,
    ...Object.fromEntries(ORGS.flatMap((org) => [[envKey(org, 'KEY'), sims[org].apiKey], [envKey(org, 'SCIM'), tokens[org]]])),
    TRAINSYNC_REQUESTS_PER_SECOND: '2000',
    TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
    TRAINSYNC_SCIM_PORT: '0',
    TRAINSYNC_SCIM_HOST: '127.0.0.1',
    TRAINSYNC_SCIM_SWEEP_MS: '200',
    // Every source's limit is 0: a single leaver is past it.
    TRAINSYNC_SCIM_MAX_DISABLE: '0',
    // The platform is read through its API every time: no source is served an older listing than another.
    TRAINSYNC_PLATFORM_FRESHNESS_MINUTES: '0',
    LOG_LEVEL: 'warn',
  };
  const config = loadConfig(env);
  const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  app = await createApp(config, createLogger(config.LOG_LEVEL, sink), { jobs: allJobs, migrate: true });
  worker = await app.queue.startWorkers([PROVISION_QUEUE]);
  scim = (await startScimService({ config, scopes: app.scopes, locks: app.locks, queue: app.queue, platform: app.platform, log: app.log }))!;

  // The same three employees in every organisation, through SCIM, with a department.
  for (const org of ORGS) {
    for (const id of PEOPLE) {
      const created = await scimRequest(org, 'POST', '/Users', { schemas: [USER, ENTERPRISE], userName: email(id), externalId: id, name: { givenName: 'Same', familyName: id }, [ENTERPRISE]: { department: `Dept ${id}` } });
      expect(created.status).toBe(201);
      scimIds[org][id] = created.json.id;
    }
  }
  await settled();
  await waitFor(async () => {
    const { n } = await owner(app).db.selectFrom('trainsync.identities').select(sql<number>`count(*)::int`.as('n')).where('platform_user_id', 'is not', null).executeTakeFirstOrThrow();
    return n === ORGS.length * PEOPLE.length ? true : undefined;
  }, 20_000, 'every account created and its id known');
});

afterAll(async () => {
  await scim?.close();
  await worker?.close();
  await app?.close();
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
  await database?.drop();
  await dropPrefix(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function scimRequest(org: Org, method: string, pathname: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`http://127.0.0.1:${scim.port}/scim/v2/${org}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${tokens[org]}`, 'content-type': 'application/scim+json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

/** Every SCIM change planned and every provisioning action finished. */
async function settled(): Promise<void> {
  await waitFor(async () => {
    await scim.idle();
    const { pending } = await owner(app).db.selectFrom('trainsync.scim_users').select(sql<number>`count(*)::int`.as('pending')).where('pending', '=', true).executeTakeFirstOrThrow();
    const { open } = await owner(app).db.selectFrom('trainsync.provisioning_actions').select(sql<number>`count(*)::int`.as('open')).where('status', 'in', ['planned', 'queued']).executeTakeFirstOrThrow();
    return pending === 0 && open === 0 ? true : undefined;
  }, 30_000, 'changes planned and actions finished');
}

/** P0 as each source states it: a one-row delta feed, a SCIM PATCH, the snapshot then `reconcile --fix`. */
async function state(org: Org, status: 'active' | 'inactive'): Promise<void> {
  if (org === 'feed-org') {
    const file = path.join(dir, `p0-${status}.csv`);
    writeFileSync(file, `employee_id,email,first_name,last_name,status\nP0,${email('P0')},Same,P0,${status}\n`);
    await provisionFeed(provisionDeps(app, org), { file, mode: 'delta', dryRun: false, force: false, maxDisable: 0 });
  } else if (org === 'scim-org') {
    const answer = await scimRequest(org, 'PATCH', `/Users/${scimIds[org].P0!}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: status === 'active' }] });
    expect(answer.status).toBe(200);
  } else {
    const row = { employeeId: 'P0', email: email('P0'), firstName: 'Same', lastName: 'P0', status, attributes: { department: 'Dept P0' } };
    await snapshotEmployees(owner(app).scope(org), { rows: [row], mode: 'delta' });
    await reconcileFix(provisionDeps(app, org), { dryRun: false, force: false, maxDisable: 0, wait: false });
  }
  await settled();
}

/** A held plan as a person reviews it, without what says which source or when. */
function reviewed(plan: HeldPlan): unknown {
  return {
    status: plan.status,
    reason: plan.reason,
    disables: plan.disables,
    activeEmployees: plan.activeEmployees,
    people: plan.people.map(({ ref: _ref, ...person }) => person),
    actions: plan.actions.map((a) => ({ id: a.id, kind: a.kind, employeeId: a.employeeId, email: a.email, seq: a.seq, baseVersion: a.baseVersion, before: a.before, after: a.after })),
  };
}

/** P0's audit rows of one kind in one organisation, each with every column of the audit shape. */
async function auditOf(org: Org, kind: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await sql<Record<string, unknown>>`
    select action_id, employee_id, email, kind, group_id, seq, before, after - 'platformUserId' as after, status, error_code, source, reason, feed_hash
      from trainsync.provisioning_actions where org = ${org} and employee_id = 'P0' and kind = ${kind} order by id`.execute(owner(app).db);
  return rows;
}

describe('the same desired change through each source', () => {
  it('a leaver past the limit: each source holds the same plan, and approved, applies the same action with the same audit shape', async () => {
    for (const org of ORGS) await state(org, 'inactive');
    const plans = {} as Record<Org, HeldPlan>;
    for (const org of ORGS) {
      const held = await listHeldPlans(owner(app).scope(org), { onlyHeld: true });
      expect(held.map((p) => p.source), org).toEqual([SOURCE[org]]);
      plans[org] = (await getHeldPlan(owner(app).db, held[0]!.id))!;
      expect(findUser(sims[org].state, email('P0'))!.hasAccess, org).toBe(true);
    }
    expect(reviewed(plans['feed-org'])).toEqual({
      status: 'held',
      reason: 'max-disable',
      disables: 1,
      activeEmployees: 3,
      people: [{ employeeId: 'P0', email: email('P0'), kinds: ['disable'], department: 'Dept P0' }],
      actions: [{ id: expect.stringMatching(/^disable:P0:v\d+$/), kind: 'disable', employeeId: 'P0', email: email('P0'), seq: 0, baseVersion: expect.any(Number), before: { active: true }, after: { active: false } }],
    });
    expect(reviewed(plans['scim-org'])).toEqual(reviewed(plans['feed-org']));
    expect(reviewed(plans['fix-org'])).toEqual(reviewed(plans['feed-org']));
    // The SCIM plan names the User it came from: approving reads it again.
    expect(plans['scim-org'].people[0]!.ref).toBe(scimIds['scim-org'].P0);

    for (const org of ORGS) {
      const approved = await approveHeldPlan(provisionDeps(app, org), plans[org].id, { by: 'tester', role: 'operator' }, { typed: 1, ask: { give: '--confirm N', shownBy: '`trainsync held`' } });
      expect(approved, org).toMatchObject({ ok: true, enqueued: [plans['feed-org'].actions[0]!.id] });
    }
    await settled();
    const rows = Object.fromEntries(await Promise.all(ORGS.map(async (org) => [org, await auditOf(org, 'disable')]))) as Record<Org, Array<Record<string, unknown>>>;
    for (const org of ORGS) {
      expect(findUser(sims[org].state, email('P0'))!.hasAccess, org).toBe(false);
      expect(rows[org], org).toHaveLength(1);
      expect(rows[org][0], org).toMatchObject({ status: 'succeeded', source: SOURCE[org], reason: expect.stringMatching(/: status inactive$/) });
      // The same row, but for what says which source planned it.
      const { source: _s, reason: _r, feed_hash: _f, ...same } = rows[org][0]!;
      const { source: _s0, reason: _r0, feed_hash: _f0, ...feed } = rows['feed-org'][0]!;
      expect(same, org).toEqual(feed);
    }
    expect(rows['scim-org'][0]!.feed_hash).toBe('via SCIM');
    expect(rows['fix-org'][0]!.feed_hash).toBeNull();
    expect(rows['feed-org'][0]!.feed_hash).toMatch(/^[0-9a-f]{64}$/);
    for (const org of ORGS) expect(await listHeldPlans(owner(app).scope(org), { onlyHeld: true }), org).toEqual([]);
  });

  it('a returner (no guard): each source applies the same action at once', async () => {
    for (const org of ORGS) await state(org, 'active');
    const rows = Object.fromEntries(await Promise.all(ORGS.map(async (org) => [org, await auditOf(org, 'enable')]))) as Record<Org, Array<Record<string, unknown>>>;
    for (const org of ORGS) {
      expect(findUser(sims[org].state, email('P0'))!.hasAccess, org).toBe(true);
      expect(rows[org], org).toEqual([expect.objectContaining({ action_id: expect.stringMatching(/^enable:P0:v\d+$/), status: 'succeeded', source: SOURCE[org], reason: expect.stringMatching(/: status active again$/) })]);
      const { source: _s, reason: _r, feed_hash: _f, ...same } = rows[org][0]!;
      const { source: _s0, reason: _r0, feed_hash: _f0, ...feed } = rows['feed-org'][0]!;
      expect(same, org).toEqual(feed);
      expect(await listHeldPlans(owner(app).scope(org), { onlyHeld: true }), org).toEqual([]);
    }
  });
});
