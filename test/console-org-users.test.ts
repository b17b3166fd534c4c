import { owner } from './helpers/owner.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { loadConfig } from '../src/config.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { QUEUE_NAMES } from '../src/queue/names.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { consoleSession, visible, type ConsoleSession } from './helpers/console-http.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * Console users per organisation, over HTTP against a real console, Postgres, Redis and the
 * simulator, with three organisations. lena (operator of acme only) names globex's and
 * initech's runs, held plans, failed actions, people, syncs, drift repair and the selector:
 * every page and change answers 404 and the warehouse and the queues are unchanged; no page
 * of hers so much as names another organisation; bull-board is not hers. max (viewer of acme
 * and globex) chooses between those two only. olga (every organisation) keeps today's view.
 * Each console change's audit row carries the organisation it was made in. Rows are written
 * straight into the warehouse: what matters is what each user reaches of them.
 */

const ORGS = ['acme', 'globex', 'initech'] as const;
type Org = (typeof ORGS)[number];
const LENA = { name: 'lena', password: 'lena-pass-1234' };
const MAX = { name: 'max', password: 'max-pass-1234' };
const OLGA = { name: 'olga', password: 'olga-pass-1234' };
const VERA = { name: 'vera', password: 'vera-pass-1234' };
/** The same action id in every organisation (ids repeat across organisations: the form names the organisation). */
const ACTION_ID = 'disable:E0001:v1';

let sim: RunningSimulator;
let database: TestDatabase;
let prefix: string;
let dir: string;
let app: App;
let server: ConsoleServer;
let base: string;
let lena: ConsoleSession;
let max: ConsoleSession;
let olga: ConsoleSession;
let vera: ConsoleSession;
const runs = {} as Record<Org, number>;
const plans = {} as Record<Org, number>;

beforeAll(async () => {
  sim = await startSimulator({ seed: 30, sizes: { users: 5, courses: 2, results: 5 } });
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-console-org-users-'));
  const file = path.join(dir, 'orgs.json');
  writeFileSync(file, JSON.stringify({ organisations: ORGS.map((slug) => ({ slug, name: slug.toUpperCase(), apiUrl: sim.url, apiKey: { env: 'ORG_KEY' } })) }));
  const cost = { N: 2 ** 12, r: 8, p: 1 };
  const [lenaHash, maxHash, olgaHash, veraHash] = await Promise.all([LENA, MAX, OLGA, VERA].map((u) => hashConsolePassword(u.password, cost)));
  const config = loadConfig({
    TRAINSYNC_ORGS_FILE: file,
    ORG_KEY: sim.apiKey,
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_CONSOLE_USERS: `${LENA.name}:operator:${lenaHash}:acme,${MAX.name}:viewer:${maxHash}:acme+globex,${OLGA.name}:operator:${olgaHash},${VERA.name}:viewer:${veraHash}`,
    TRAINSYNC_CONSOLE_PORT: '0',
    LOG_LEVEL: 'warn',
  });
  const log = createLogger(config.LOG_LEVEL, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
  app = await createApp(config, log, { jobs: allJobs });
  for (const org of ORGS) {
    const run = await sql<{ id: number }>`
      insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, inserted)
      values (${org}, 'users', 'full', now() - interval '1 hour', now() - interval '59 minutes', 'succeeded', 7) returning id`.execute(owner(app).db);
    runs[org] = run.rows[0]!.id;
    const hash = Buffer.from(org).toString('hex').padEnd(64, '0');
    const plan = await sql<{ id: number }>`
      insert into trainsync.held_plans (org, feed_hash, file, mode, reason, message, actions, people, disables, feed, status)
      values (${org}, ${hash}, ${`plan-of-${org}.csv`}, 'full', 'max-disable', 'held by the test', '[]'::jsonb, '[]'::jsonb, 3,
              '{"rows": [], "keepEmployeeIds": [], "keepEmails": []}'::jsonb, 'held') returning id`.execute(owner(app).db);
    plans[org] = plan.rows[0]!.id;
    await sql`insert into trainsync.feeds (org, hash, path, format, mode, rows, errors, actions)
              values (${org}, ${hash}, ${`/feeds/feed-of-${org}.csv`}, 'csv', 'full', 10, 0, 1)`.execute(owner(app).db);
    await sql`insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, before, after, status, attempts, error_code, error_message)
              values (${org}, ${ACTION_ID}, 'E0001', ${`person@${org}.test`}, 'disable', '{"active": true}'::jsonb, '{"active": false}'::jsonb, 'failed', 3, 'TEST', 'failed in the test')`.execute(owner(app).db);
    await sql`insert into trainsync.console_audit (org, username, role, action, target) values (${org}, 'someone', 'operator', 'retry-action', ${`target-of-${org}`})`.execute(owner(app).db);
    await sql`insert into trainsync.webhook_events (org, event_id, event_type, payload, processed_at, outcome)
              values (${org}, ${`event-of-${org}`}, 'TEST_EVENT', '{}'::jsonb, now(), 'test')`.execute(owner(app).db);
  }
  // A change that spans every organisation (bull-board's): its row has no organisation.
  await sql`insert into trainsync.console_audit (org, username, role, action, target) values (null, 'olga', 'operator', 'queues POST', '/queues/api/queues/provision/clean/failed')`.execute(owner(app).db);
  server = (await startConsole({ config, scopes: app.scopes, queue: app.queue, log, health: async () => ({}), repair: (org) => provisionDeps(app, org) }))!;
  base = `http://127.0.0.1:${server.port}`;
  [lena, max, olga, vera] = await Promise.all([consoleSession(base, LENA), consoleSession(base, MAX), consoleSession(base, OLGA), consoleSession(base, VERA)]);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await app?.close();
  await sim?.close();
  await database?.drop();
  if (prefix) await dropPrefix(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function page(session: ConsoleSession, path: string): Promise<string> {
  const answer = await session.get(path);
  expect(answer.status, path).toBe(200);
  return answer.text;
}

/** Everything a change could touch, in the warehouse and in the queues. */
async function state(): Promise<unknown> {
  const q = async (query: string): Promise<unknown[]> => (await database.pool.query(query)).rows;
  const jobs = await Promise.all(QUEUE_NAMES.map(async (name) => [name, await app.queue.queues[name].getJobCounts()]));
  return {
    plans: await q('select id, org, status, decided_by, decided_at from trainsync.held_plans order by id'),
    actions: await q('select org, action_id, status, attempts, updated_at from trainsync.provisioning_actions order by id'),
    audit: await q('select id, org, username, action, target from trainsync.console_audit order by id'),
    runs: await q('select id, org, status, finished_at from trainsync.runs order by id'),
    sessions: await q("select username, org from trainsync.console_sessions order by username, created_at"),
    jobs,
  };
}

describe('a console user of one organisation (lena: operator of acme)', () => {
  it('no page of hers names another organisation or shows its rows; no selector, her organisation named; no Queues', async () => {
    const pages = ['/', '/runs', '/runs?resource=users', `/runs/${runs.acme}`, '/provisioning', '/provisioning?status=failed', `/provisioning/held/${plans.acme}`, '/people', '/webhooks'];
    for (const path of pages) {
      const text = await page(lena, path);
      expect(text, path).not.toMatch(/globex|initech/i);
      expect(text, path).not.toContain('href="/queues"');
      expect(text, path).not.toContain('id="org-select"');
      expect(visible(text), path).toContain('Organisation ACME (acme)');
    }
    const provisioning = await page(lena, '/provisioning');
    for (const own of ['plan-of-acme.csv', 'feed-of-acme.csv', 'person@acme.test', 'target-of-acme']) expect(provisioning).toContain(own);
    // The audit rows that span every organisation are not hers to see.
    expect(provisioning).not.toContain('clean/failed');
    expect(await page(lena, '/webhooks')).toContain('event-of-acme');
    // The audit trail searched for another organisation's person finds no one.
    // (the search box keeps what was typed: that is the only mention).
    const search = await page(lena, '/provisioning?who=person%40globex.test');
    expect(search.split('person@globex.test')).toHaveLength(2);
    expect(search).toContain('value="person@globex.test"');
  });

  it("every page and change naming globex's or initech's run, plan, action, sync, repair or organisation answers 404 and changes nothing", async () => {
    const before = await state();
    for (const other of ['globex', 'initech'] as const) {
      const gets = [`/runs/${runs[other]}`, `/provisioning/held/${plans[other]}`];
      for (const path of gets) expect((await lena.get(path)).status, path).toBe(404);
      const posts: Array<[string, Record<string, string>]> = [
        [`/provisioning/held/${plans[other]}/approve`, { confirm: '3' }],
        [`/provisioning/held/${plans[other]}/reject`, { reason: 'not hers' }],
        [`/provisioning/actions/${encodeURIComponent(ACTION_ID)}/retry`, { org: other }],
        ['/sync/users/cancel', { org: other }],
        ['/people/repair', { org: other }],
        ['/org', { org: other, back: '/runs' }],
      ];
      for (const [path, fields] of posts) {
        const answer = await lena.post(path, fields, '/');
        expect(answer.status, `${path} ${JSON.stringify(fields)}`).toBe(404);
        expect(answer.text, path).not.toMatch(/globex|initech|held by the test/i);
      }
    }
    // An organisation that does not exist answers the same: nothing tells her which slugs are taken.
    expect((await lena.post('/sync/users/cancel', { org: 'umbrella' }, '/')).status).toBe(404);
    expect((await lena.post('/org', { org: 'umbrella' }, '/')).status).toBe(404);
    // A run or plan id that does not exist answers as another organisation's does.
    const missing = await lena.get('/runs/999999');
    const other = await lena.get(`/runs/${runs.globex}`);
    expect([missing.status, other.status]).toEqual([404, 404]);
    expect(other.text).toBe(`no run #${runs.globex} in the organisations shown`);
    expect(await state()).toEqual(before);
  });

  it('bull-board is not there for her: its page, its API and its actions answer 404, whatever the spelling of the path', async () => {
    const before = await state();
    for (const path of ['/queues', '/queues/', '/queues/api/queues', '/queues/static/js/main.js', '/%71ueues', '/queues/api/../api/queues']) {
      expect((await lena.get(path)).status, path).toBe(404);
    }
    const action = await lena.post('/queues/api/queues/provision/clean/failed', {}, '/');
    expect(action.status).toBe(404);
    expect(await state()).toEqual(before);
  });

  it('her changes act in acme, and each audit row carries its organisation', async () => {
    const rejected = await lena.post(`/provisioning/held/${plans.acme}/reject`, { reason: 'checked with acme' }, `/provisioning/held/${plans.acme}`);
    expect(rejected.status, rejected.text).toBe(303);
    const { rows } = await database.pool.query<{ org: string; username: string; action: string; target: string; status: string }>(
      `select a.org, a.username, a.action, a.target, p.status from trainsync.console_audit a, trainsync.held_plans p
        where a.username = 'lena' and p.id = $1 order by a.id`,
      [plans.acme],
    );
    expect(rows).toEqual([{ org: 'acme', username: 'lena', action: 'reject-held-plan', target: `plan #${plans.acme}`, status: 'rejected' }]);
  });
});

describe('a console user of two of three organisations (max: viewer of acme and globex)', () => {
  it('the selector lists only acme and globex; initech is neither listed nor reachable', async () => {
    const home = await page(max, '/');
    const options = [...home.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]);
    expect(options).toEqual(['', 'acme', 'globex']);
    expect(visible(home)).toContain('All 2 organisations');
    expect(home).not.toMatch(/initech/i);
    expect(home).not.toContain('href="/queues"');
    const runsPage = await page(max, '/runs');
    expect(runsPage).toContain(`href="/runs/${runs.acme}"`);
    expect(runsPage).toContain(`href="/runs/${runs.globex}"`);
    expect(runsPage).not.toContain(`href="/runs/${runs.initech}"`);
    expect((await max.get(`/runs/${runs.initech}`)).status).toBe(404);
    expect((await max.get(`/provisioning/held/${plans.initech}`)).status).toBe(404);
    expect((await max.get('/queues')).status).toBe(404);
    expect((await max.post('/org', { org: 'initech' }, '/')).status).toBe(404);
  });

  it('choosing globex scopes every page to it', async () => {
    const chose = await max.post('/org', { org: 'globex', back: '/webhooks' }, '/');
    expect(chose.status).toBe(302);
    const webhooks = await page(max, '/webhooks');
    expect(visible(webhooks)).toContain('Organisation GLOBEX (globex)');
    expect(webhooks).toContain('event-of-globex');
    expect(webhooks).not.toContain('event-of-acme');
  });
});

describe('an operator of every organisation (olga) keeps today\'s view', () => {
  it('the selector lists all three, the Queues page and bull-board answer, every organisation\'s rows show', async () => {
    const home = await page(olga, '/');
    expect([...home.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1])).toEqual(['', 'acme', 'globex', 'initech']);
    expect(home).toContain('href="/queues"');
    expect((await olga.get('/queues')).status).toBe(200);
    const api = await olga.get('/queues/api/queues');
    expect(api.status).toBe(200);
    expect(() => JSON.parse(api.text) as unknown).not.toThrow();
    const provisioning = await page(olga, '/provisioning');
    for (const org of ORGS) expect(provisioning).toContain(`target-of-${org}`);
    expect(provisioning).toContain('clean/failed');
    expect((await olga.get(`/runs/${runs.initech}`)).status).toBe(200);
  });

  it("her change in globex is audited with globex", async () => {
    const rejected = await olga.post(`/provisioning/held/${plans.globex}/reject`, {}, `/provisioning/held/${plans.globex}`);
    expect(rejected.status, rejected.text).toBe(303);
    const { rows } = await database.pool.query<{ org: string; action: string }>(`select org, action from trainsync.console_audit where username = 'olga' and action = 'reject-held-plan'`);
    expect(rows).toEqual([{ org: 'globex', action: 'reject-held-plan' }]);
    // lena still sees her own change, not olga's in globex.
    const lenaAudit = await page(lena, '/provisioning');
    expect(lenaAudit).toContain(`plan #${plans.acme}`);
    expect(lenaAudit).not.toContain(`plan #${plans.globex}`);
  });

  it('bull-board\'s actions stay an operator\'s, however the path is spelled: a viewer of every organisation is refused, nothing paused', async () => {
    const before = await state();
    for (const path of ['/queues/api/queues/provision/pause', '/%71ueues/api/queues/provision/pause', '/queues/%61pi/queues/provision/pause']) {
      const answer = await fetch(`${base}${path}`, { method: 'PUT', headers: { cookie: vera.cookies(), 'sec-fetch-site': 'same-origin' } });
      expect(answer.status, path).toBe(403);
    }
    expect(await app.queue.queues.provision.isPaused()).toBe(false);
    expect(await state()).toEqual(before);
  });
});
