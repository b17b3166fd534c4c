import { owner } from './helpers/owner.ts';
import { existsSync, mkdirSync } from 'node:fs';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { QUEUE_NAMES, SYNC_QUEUE, WEBHOOK_QUEUE } from '../src/queue/names.ts';
import type { WorkerHandle } from '../src/queue/worker.ts';
import { startWebhookReceiver, WEBHOOK_PATH } from '../src/webhooks/receiver.ts';
import { addGroup, findUser, groupMembers } from '../src/simulator/index.ts';
import { accessSnapshot, feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * The console in a real browser (Debian's Chromium through playwright-core), against a
 * real console server, Postgres, Redis, BullMQ workers and the simulator. One browser;
 * each role has its own context (cookie jar). CONSOLE_SCREENSHOTS=<dir> also saves the
 * main pages as PNG (how docs/console-*.png are made).
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OPERATOR = { name: 'olga', password: 'operator-pass-1234' };
const VIEWER = { name: 'vera', password: 'viewer-pass-5678' };
const WEBHOOK_SECRET = Buffer.from('console-test-webhook-secret-0001').toString('base64');
const TEST_COST = { N: 2 ** 14, r: 8, p: 1 };

let h: SyncHarness;
let files: ReturnType<typeof feedDir>;
let server: ConsoleServer;
let workers: WorkerHandle;
let browser: Browser;
let operator: { context: BrowserContext; page: Page };
let viewer: { context: BrowserContext; page: Page };
let base: string;
let hashes: string[];
const pagesSeen = new Map<string, string>();
/** Earlier runs of results, six hours apart over the last day, at 17 min 5 s past an hour (UTC). */
const HOUR = 3_600_000;
const EARLIER_RUNS = Array.from({ length: 5 }, (_, i) => new Date(Math.floor(Date.now() / HOUR) * HOUR - (26 - 6 * i) * HOUR + 17 * 60_000 + 5_000));
/** Whether bull-board's modules are in this process (CommonJS packages: Node's module cache). */
const bullBoardLoaded = (): boolean => Object.keys(createRequire(import.meta.url).cache).some((file) => file.includes(`${path.sep}@bull-board${path.sep}`));

async function login(who: { name: string; password: string }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/`);
  expect(page.url()).toBe(`${base}/login`);
  await page.fill('input[name=username]', who.name);
  await page.fill('input[name=password]', who.password);
  await page.click('#login button[type=submit]');
  await page.waitForURL(`${base}/`);
  return { context, page };
}

/** With CONSOLE_SCREENSHOTS=<dir>, saves the page as <dir>/console-<name>.png, 1200×800 like every other. */
async function screenshot(page: Page, name: string): Promise<void> {
  const shots = process.env.CONSOLE_SCREENSHOTS;
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.setViewportSize({ width: 1200, height: 800 });
  // bull-board draws its page from its API after loading: wait until the queues are listed.
  if (name === 'queues') await queuesListed(page);
  await page.screenshot({ path: path.join(shots, `console-${name}.png`) });
}

/** bull-board's page, once its script has run and listed every queue (its HTML alone only says "Loading"). */
async function queuesListed(page: Page): Promise<void> {
  for (const name of QUEUE_NAMES) await page.getByText(name, { exact: true }).first().waitFor({ timeout: 20_000 });
  await page.getByText('Loading...').waitFor({ state: 'detached', timeout: 20_000 });
}

/** The pages whose screenshots are in the README (a run's page: whichever run the test opens). */
const screenshotName = (url: string): string | undefined =>
  /^\/runs\/\d+$/.test(url) ? 'run' : { '/': 'overview', '/runs?resource=results': 'runs', '/provisioning': 'provisioning', '/people': 'people', '/webhooks': 'webhooks', '/queues': 'queues' }[url];

/** Visits a page, keeps its HTML for the secret scan, and returns the response status. */
async function visit(page: Page, url: string): Promise<number> {
  const response = await page.goto(`${base}${url}`);
  pagesSeen.set(url, await page.content());
  const name = screenshotName(url);
  if (name) await screenshot(page, name);
  return response?.status() ?? 0;
}

/** The console's audit rows of one change, as the test reads them. */
async function auditRows(action: string): Promise<Array<{ org: string | null; username: string; role: string; target: string }>> {
  const { rows } = await sql<{ org: string | null; username: string; role: string; target: string }>`
    select org, username, role, target from trainsync.console_audit where action = ${action} order by id`.execute(owner(h.app).db);
  return rows;
}

const csrfOf = (page: Page): Promise<string> => page.locator('input[name=_csrf]').first().inputValue();

function feedWith(change: (rows: HrRow[]) => void): string {
  const rows = rowsFromState(h.sim.state);
  change(rows);
  return files.write(`feed-${Math.random().toString(36).slice(2)}.csv`, toCsv(rows));
}

async function holdPlanDisabling(count: number): Promise<{ id: number; emails: string[] }> {
  let emails: string[] = [];
  const file = feedWith((rows) => {
    const active = rows.filter((r) => r.status === 'active').slice(0, count);
    for (const r of active) r.status = 'terminated';
    emails = active.map((r) => r.email);
  });
  const result = await provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'full', dryRun: false, force: false });
  expect(result.plan.refused?.reason).toBe('max-disable');
  expect(result.heldPlanId).toBeGreaterThan(0);
  return { id: result.heldPlanId!, emails };
}

beforeAll(async () => {
  // Not skipped when missing: `npm test` installs it first (bin/test-prerequisites.sh).
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install -y chromium (npm test's pretest does it as root; or set CHROMIUM_PATH)`);
  const operatorHash = await hashConsolePassword(OPERATOR.password, TEST_COST);
  const viewerHash = await hashConsolePassword(VIEWER.password, TEST_COST);
  hashes = [operatorHash, viewerHash];
  h = await createSyncHarness({
    simulator: { seed: 21, sizes: { users: 40, groups: 3, courses: 4, results: 60 } },
    env: {
      TRAINSYNC_CONSOLE_USERS: `${OPERATOR.name}:operator:${operatorHash},${VIEWER.name}:viewer:${viewerHash}`,
      TRAINSYNC_CONSOLE_PORT: '0',
      TRAINSYNC_WEBHOOK_SECRET: WEBHOOK_SECRET,
    },
  });
  files = feedDir();
  workers = await h.app.queue.startWorkers(QUEUE_NAMES);
  // The applied state: every account adopted by a first, unchanged feed.
  await provisionFeed(provisionDeps(h.app, 'default'), { file: feedWith(() => undefined), mode: 'full', dryRun: false, force: false });
  h.sim.setFaults({ malformedResultEvery: 7 });
  await h.sync(['courses', 'groups', 'users', 'results']);
  h.sim.setFaults({ malformedResultEvery: 0 });
  // Schedules three hours off or more (none fires during the test): the Overview's "next scheduled".
  const hour = (new Date().getUTCHours() + 3) % 24;
  for (const [i, resource] of ['courses', 'groups', 'users', 'results'].entries()) {
    await h.app.queue.upsertSchedule({ id: `sync-${resource}`, org: DEFAULT_ORG, job: `sync-${resource}`, queue: SYNC_QUEUE, pattern: `${15 * i} ${hour} * * *` });
  }
  // Earlier runs of results, for the chart to have a history (the synced run stays the latest).
  for (const [i, at] of EARLIER_RUNS.entries()) {
    await sql`insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, inserted, updated, unchanged, requests, pages)
              values (${DEFAULT_ORG}, 'results', 'incremental', ${at.toISOString()}, ${new Date(at.getTime() + (20 + 7 * i) * 1000).toISOString()}, 'succeeded', ${3 * i}, ${i}, ${40 + 2 * i}, ${2 + i}, ${1 + i})`.execute(owner(h.app).db);
  }
  server = (await startConsole({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: (org) => provisionDeps(h.app, org) }))!;
  base = `http://127.0.0.1:${server.port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
  operator = await login(OPERATOR);
  viewer = await login(VIEWER);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await workers?.close();
  await h?.close();
  files?.cleanup();
});

describe('the operator console in a browser', () => {
  it('logs in as operator and as viewer, each shown with their role; a wrong password is refused', async () => {
    expect(await operator.page.locator('header').innerText()).toContain('olga (operator)');
    expect(await viewer.page.locator('header').innerText()).toContain('vera (viewer)');
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.fill('input[name=username]', OPERATOR.name);
    await page.fill('input[name=password]', 'not-the-password');
    await screenshot(page, 'login');
    await page.click('#login button[type=submit]');
    expect(await page.locator('.error').innerText()).toMatch(/Wrong user name or password/);
    expect((await context.cookies()).some((c) => c.name === 'trainsync_console')).toBe(false);
    // Guessing is throttled per user name (and per address): the sixth failure in a minute gets 429.
    const token = await csrfOf(page);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const attempt = await context.request.post(`${base}/login`, { form: { _csrf: token, username: 'mallory', password: `guess-${i}` }, maxRedirects: 0 });
      statuses.push(attempt.status());
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    await context.close();
  });

  it('serves pages with a strict CSP, an HttpOnly SameSite=Strict session cookie and no inline script', async () => {
    const response = await operator.page.goto(`${base}/`);
    const csp = response!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const cookie = (await operator.context.cookies()).find((c) => c.name === 'trainsync_console')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(cookie.expires).toBeGreaterThan(Date.now() / 1000);
    expect(await operator.page.content()).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    // Memory: bull-board is loaded on the first Queues request, not with the console.
    expect(bullBoardLoaded()).toBe(false);
  });

  it('a viewer sees a held plan but cannot approve it: no button, and the server refuses a direct POST with a valid token', async () => {
    const held = await holdPlanDisabling(10);
    const before = accessSnapshot(h.sim.state);
    expect(await visit(viewer.page, `/provisioning/held/${held.id}`)).toBe(200);
    expect(await viewer.page.locator('#affected').innerText()).toContain(held.emails[0]!);
    expect(await viewer.page.locator('#approve').count()).toBe(0);
    const token = await csrfOf(viewer.page);
    const refused = await viewer.context.request.post(`${base}/provisioning/held/${held.id}/approve`, { form: { _csrf: token }, maxRedirects: 0 });
    expect(refused.status()).toBe(403);
    const row = await sql<{ status: string }>`select status from trainsync.held_plans where id = ${held.id}`.execute(owner(h.app).db);
    expect(row.rows[0]!.status).toBe('held');
    expect(accessSnapshot(h.sim.state)).toEqual(before);
    // bull-board's actions too: a viewer reads the queues, and cannot change them.
    expect((await viewer.context.request.get(`${base}/queues/api/queues`)).status()).toBe(200);
    expect(bullBoardLoaded()).toBe(true);
    const pause = await viewer.context.request.put(`${base}/queues/api/queues/provision/pause`, { headers: { 'sec-fetch-site': 'same-origin' }, maxRedirects: 0 });
    expect(pause.status()).toBe(403);
  });

  it('a rejected plan changes nothing', async () => {
    const held = await holdPlanDisabling(10);
    const before = accessSnapshot(h.sim.state);
    const actionsBefore = await sql<{ n: number }>`select count(*)::int as n from trainsync.provisioning_actions`.execute(owner(h.app).db);
    await visit(operator.page, `/provisioning/held/${held.id}`);
    await operator.page.click('#reject');
    expect(await operator.page.locator('#outcome').innerText()).toMatch(/rejected/);
    const row = await sql<{ status: string; decided_by: string; decided_role: string }>`select status, decided_by, decided_role from trainsync.held_plans where id = ${held.id}`.execute(owner(h.app).db);
    expect(row.rows[0]).toEqual({ status: 'rejected', decided_by: 'olga', decided_role: 'operator' });
    const actionsAfter = await sql<{ n: number }>`select count(*)::int as n from trainsync.provisioning_actions`.execute(owner(h.app).db);
    expect(actionsAfter.rows[0]!.n).toBe(actionsBefore.rows[0]!.n);
    expect(accessSnapshot(h.sim.state)).toEqual(before);
    // The rejection itself is a change: audited with the user and the role.
    expect(await auditRows('reject-held-plan')).toEqual([{ org: DEFAULT_ORG, username: OPERATOR.name, role: 'operator', target: `plan #${held.id}` }]);
  });

  it('refuses a change with a wrong CSRF token; a held plan approved in the browser is applied, and audited with user and role', async () => {
    const held = await holdPlanDisabling(10);
    const forged = await operator.context.request.post(`${base}/provisioning/held/${held.id}/approve`, { form: { _csrf: 'forged-token' }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    const noToken = await operator.context.request.post(`${base}/provisioning/held/${held.id}/approve`, { form: {}, maxRedirects: 0 });
    expect(noToken.status()).toBe(403);
    for (const email of held.emails) expect(findUser(h.sim.state, email)!.hasAccess).toBe(true);

    // The page says why it was held, and names the first people who would lose access, with their department.
    await visit(operator.page, `/provisioning/held/${held.id}`);
    expect(await operator.page.locator('#why').innerText()).toMatch(/^Held by the disable limit: 10 people would lose access\. The organisation has \d+ active employees\. The feed feed-\w+\.csv has \d+ valid rows\.$/);
    const read = await sql<{ rows: number }>`select rows from trainsync.feeds where refused = 'max-disable' order by id desc limit 1`.execute(owner(h.app).db);
    expect(await operator.page.locator('#rows-read').innerText()).toBe(String(read.rows[0]!.rows));
    expect(await operator.page.locator('#losing tr').count()).toBe(11);
    expect(await operator.page.locator('#losing').innerText()).toContain(held.emails[0]!.toLowerCase());

    // Approving takes the typed number of people who lose access: without it (or with another) the server refuses, 400.
    const token = await csrfOf(operator.page);
    const bare = await operator.context.request.post(`${base}/provisioning/held/${held.id}/approve`, { form: { _csrf: token }, maxRedirects: 0 });
    expect(bare.status()).toBe(400);
    expect(await bare.text()).toMatch(/Not approved: plan #\d+ takes access away from people: to approve it, give the number of people who will lose access/);
    const wrong = await operator.context.request.post(`${base}/provisioning/held/${held.id}/approve`, { form: { _csrf: token, confirm: '9' }, maxRedirects: 0 });
    expect(wrong.status()).toBe(400);
    for (const email of held.emails) expect(findUser(h.sim.state, email)!.hasAccess).toBe(true);
    expect((await sql<{ status: string }>`select status from trainsync.held_plans where id = ${held.id}`.execute(owner(h.app).db)).rows[0]!.status).toBe('held');

    await visit(operator.page, `/provisioning/held/${held.id}`);
    await operator.page.fill('#confirm', '10');
    // The approval step as an operator sees it: why it was held, who loses access, the typed count.
    await screenshot(operator.page, 'held-plan');
    await operator.page.click('#approve');
    expect(await operator.page.locator('#outcome').innerText()).toMatch(/approved: 10 actions enqueued/);
    await vi.waitFor(() => {
      for (const email of held.emails) expect(findUser(h.sim.state, email)!.hasAccess).toBe(false);
    }, { timeout: 30_000, interval: 100 });
    // The feed is snapshotted as `provision --force` would: training.employees shows them inactive.
    const employees = await sql<{ status: string }>`select status from training.employees where email = any(${held.emails.map((e) => e.toLowerCase())})`.execute(owner(h.app).db);
    expect(employees.rows.map((r) => r.status)).toEqual(held.emails.map(() => 'inactive'));
    const audit = await sql<{ username: string; role: string; action: string; detail: unknown }>`select username, role, action, detail from trainsync.console_audit where target = ${`plan #${held.id}`}`.execute(owner(h.app).db);
    expect(audit.rows).toEqual([{ username: 'olga', role: 'operator', action: 'approve-held-plan', detail: { enqueued: 10, confirmed: 10, source: 'feed' } }]);
    const decided = await sql<{ decided_by: string; decided_role: string }>`select decided_by, decided_role from trainsync.held_plans where id = ${held.id}`.execute(owner(h.app).db);
    expect(decided.rows).toEqual([{ decided_by: 'olga', decided_role: 'operator' }]);
    // The audit trail says which source planned each action, and why.
    const actions = await sql<{ source: string; reason: string }>`select source, reason from trainsync.provisioning_actions where kind = 'disable' and email = any(${held.emails.map((e) => e.toLowerCase())})`.execute(owner(h.app).db);
    expect(actions.rows).toHaveLength(10);
    for (const row of actions.rows) expect(row).toEqual({ source: 'feed', reason: expect.stringMatching(/^feed-\w+\.csv line \d+: status inactive$/) });
    // Decided once: a second approval is refused.
    await visit(operator.page, `/provisioning/held/${held.id}`);
    expect(await operator.page.locator('#approve').count()).toBe(0);
  });

  it('a queued sync is cancelled from the Overview by an operator (audited); a viewer is refused', async () => {
    const syncQueue = h.app.queue.queues[SYNC_QUEUE];
    // Paused, so the sync stays queued for the test to cancel.
    await syncQueue.pause();
    try {
      const job = await h.app.queue.add('sync-courses', { trigger: 'cli', full: false }, { org: DEFAULT_ORG, dedupeId: 'sync-courses' });
      expect(await visit(viewer.page, '/')).toBe(200);
      expect(await viewer.page.locator('#pending').innerText()).toContain('courses');
      expect(await viewer.page.locator('#cancel-courses').count()).toBe(0);
      const refused = await viewer.context.request.post(`${base}/sync/courses/cancel`, { form: { _csrf: await csrfOf(viewer.page) }, maxRedirects: 0 });
      expect(refused.status()).toBe(403);
      expect((await h.app.queue.deduplicated(SYNC_QUEUE, 'sync-courses', DEFAULT_ORG))?.id).toBe(job.id);

      expect(await visit(operator.page, '/')).toBe(200);
      await operator.page.locator('#cancel-courses').click();
      await operator.page.waitForSelector('#outcome');
      expect(await operator.page.locator('#outcome').innerText()).toContain(`Cancelled job ${job.id} (sync-courses, waiting)`);
      expect(await h.app.queue.deduplicated(SYNC_QUEUE, 'sync-courses', DEFAULT_ORG)).toBeUndefined();
      const audited = await sql<{ username: string; role: string; target: string }>`select username, role, target from trainsync.console_audit where action = 'cancel-sync'`.execute(owner(h.app).db);
      expect(audited.rows).toEqual([{ username: OPERATOR.name, role: 'operator', target: 'courses' }]);
    } finally {
      await syncQueue.resume();
    }
  });

  it('a failed action is retried from the browser and then succeeds', async () => {
    const missingGroup = '00000000-0000-4000-8000-0000000000c1';
    let someone: HrRow | undefined;
    const file = feedWith((rows) => {
      someone = rows.find((r) => r.status === 'active')!;
      someone.groups = [...someone.groups, missingGroup].sort();
    });
    const result = await provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'full', dryRun: false, force: false });
    const failed = result.applied!.audit.find((a) => a.kind === 'add-to-group')!;
    expect(failed).toMatchObject({ status: 'failed', errorCode: 'GROUP_NOT_FOUND' });
    addGroup(h.sim.state, { id: missingGroup, name: 'Created after the failure' });

    await visit(operator.page, '/provisioning?status=failed');
    await operator.page.click(`#retry-${someone!.employee_id}-add-to-group`);
    expect(await operator.page.locator('#outcome').innerText()).toMatch(/enqueued again/);
    await vi.waitFor(async () => {
      const row = await sql<{ status: string }>`select status from trainsync.provisioning_actions where action_id = ${failed.actionId}`.execute(owner(h.app).db);
      expect(row.rows[0]!.status).toBe('succeeded');
    }, { timeout: 30_000, interval: 100 });
    expect(groupMembers(h.sim.state, missingGroup)).toContain(findUser(h.sim.state, someone!.email)!.id);
    expect(await auditRows('retry-action')).toEqual([{ org: DEFAULT_ORG, username: OPERATOR.name, role: 'operator', target: failed.actionId }]);
    // A viewer's retry is refused by the server, and a refused change writes no audit row.
    await visit(viewer.page, '/provisioning');
    const refused = await viewer.context.request.post(`${base}/provisioning/actions/${encodeURIComponent(failed.actionId)}/retry`, { form: { _csrf: await csrfOf(viewer.page) }, maxRedirects: 0 });
    expect(refused.status()).toBe(403);
    expect(await auditRows('retry-action')).toHaveLength(1);
  });

  it("shows a run's quarantined records with their reasons, and the runs list and chart", async () => {
    const run = await sql<{ id: number; quarantined: number }>`select id, quarantined from trainsync.runs where resource = 'results' and quarantined > 0 order by id desc limit 1`.execute(owner(h.app).db);
    const { id, quarantined } = run.rows[0]!;
    expect(await visit(operator.page, `/runs/${id}`)).toBe(200);
    const rows = operator.page.locator('#quarantine tr td.reason');
    expect(await rows.count()).toBe(quarantined);
    expect((await rows.first().innerText()).length).toBeGreaterThan(5);
    expect(await visit(operator.page, '/runs?resource=results')).toBe(200);
    expect(await operator.page.locator('#runs').innerText()).toContain(`#${id}`);
    await operator.page.waitForSelector('#runs-chart .uplot');
    // Every figure links to its rows: the Overview's quarantined count opens that run's quarantine.
    const last = await sql<{ id: number; quarantined: number }>`select id, quarantined from trainsync.runs where resource = 'results' order by started_at desc, id desc limit 1`.execute(owner(h.app).db);
    expect(await visit(operator.page, '/')).toBe(200);
    expect(await operator.page.locator('#quarantined-results').innerText()).toBe(String(last.rows[0]!.quarantined));
    await operator.page.locator('#quarantined-results').click();
    await operator.page.waitForURL(`${base}/runs/${last.rows[0]!.id}#quarantine`);
  });

  it('drift repair: a dry run shows the repair and changes nothing; an operator applies it', async () => {
    const snapshot = await sql<{ email: string }>`
      select e.email from training.employees e join trainsync.identities i using (employee_id)
       where e.status = 'active' and e.removed_at is null and i.active order by e.employee_id limit 1`.execute(owner(h.app).db);
    const email = snapshot.rows[0]!.email;
    const account = findUser(h.sim.state, email)!;
    account.hasAccess = false; // removed by hand on the platform

    expect(await visit(operator.page, '/people/repair')).toBe(200);
    const row = operator.page.locator('#repair-actions tr', { hasText: email });
    expect(await row.innerText()).toMatch(/enable/);
    expect(findUser(h.sim.state, email)!.hasAccess).toBe(false);
    await operator.page.click('#apply-repair');
    expect(await operator.page.locator('#outcome').innerText()).toMatch(/Repair applied: \d+ actions enqueued/);
    await vi.waitFor(() => expect(findUser(h.sim.state, email)!.hasAccess).toBe(true), { timeout: 30_000, interval: 100 });
    expect(await auditRows('reconcile-fix')).toEqual([{ org: DEFAULT_ORG, username: OPERATOR.name, role: 'operator', target: 'training.employees' }]);
    // Each reconciliation count links to its rows. The repair left none (and the users listing
    // that predates it no longer counts the leavers trainsync disabled since): HR lists one
    // employee the platform has no account for.
    await sql`insert into training.employees (org, employee_id, email, first_name, last_name, status, attributes, first_seen_at, last_seen_at, updated_at)
              values (${DEFAULT_ORG}, 'E-NO-ACCOUNT', 'no.account@acme-training.example', 'No', 'Account', 'active', '{}'::jsonb, now(), now(), now())`.execute(owner(h.app).db);
    const kinds = await sql<{ kind: string; n: number }>`select kind, count(*)::int as n from training.hr_reconciliation group by kind order by n desc, kind limit 1`.execute(owner(h.app).db);
    const { kind, n } = kinds.rows[0]!;
    expect(await visit(operator.page, '/people')).toBe(200);
    expect(await operator.page.locator(`#count-${kind}`).innerText()).toBe(String(n));
    await operator.page.locator(`#count-${kind}`).click();
    await operator.page.waitForURL(`${base}/people/discrepancies?kind=${kind}`);
    expect(await operator.page.locator('#discrepancies tr').count()).toBe(1 + Math.min(n, 50));
  });

  it('shows a badly signed webhook delivery on the Webhooks page: why and which header, never its body or signature', async () => {
    const receiver = await startWebhookReceiver({ config: h.config, orgs: [{ slug: DEFAULT_ORG, keys: [Buffer.from(WEBHOOK_SECRET, 'base64')] }], scopes: h.app.scopes, queue: h.app.queue, metrics: h.app.metrics, log: h.app.log });
    try {
      const body = JSON.stringify({ eventId: 'aaaaaaaa-0000-4000-8000-00000000beef', eventType: 'COURSE_COMPLETE', data: { marker: 'body-must-not-show' } });
      const answer = await fetch(`http://127.0.0.1:${receiver.port}${WEBHOOK_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', [h.config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER]: 'c2lnbmF0dXJlLXZhbHVlLW5vdC1zaG93bg==' }, body });
      expect(answer.status).toBe(401);
    } finally {
      await receiver.close();
    }
    expect(await visit(viewer.page, '/webhooks')).toBe(200);
    // Forged deliveries are counted per minute (written when the receiver closes), not kept one by one.
    const refusals = await viewer.page.locator('#refusal-counts').innerText();
    expect(refusals).toContain('signature invalid');
    expect(refusals).toContain(h.config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER);
    const content = await viewer.page.content();
    expect(content).not.toContain('body-must-not-show');
    expect(content).not.toContain('c2lnbmF0dXJlLXZhbHVlLW5vdC1zaG93bg==');
  });

  it('the runs chart reads in UTC, as the tables do, in a browser whose zone is not UTC', async () => {
    const context = await browser.newContext({ timezoneId: 'America/Los_Angeles', storageState: await operator.context.storageState() });
    try {
      const page = await context.newPage();
      await page.goto(`${base}/runs?resource=results`);
      await page.waitForSelector('#runs-chart .uplot');
      expect(await page.evaluate(() => new Date(Date.UTC(2026, 0, 1, 12)).getHours())).toBe(4);
      expect(await page.locator('#runs-chart .u-legend .u-series').first().locator('th').innerText()).toBe('time (UTC)');
      // The cursor at the plot's left edge snaps to the first run: the legend names its start in UTC, to the second.
      const over = page.locator('#runs-chart .u-over');
      const box = (await over.boundingBox())!;
      await page.mouse.move(box.x + 1, box.y + box.height / 2);
      const first = EARLIER_RUNS[0]!.toISOString();
      await expect.poll(() => page.locator('#runs-chart .u-legend .u-series').first().locator('.u-value').innerText()).toBe(`${first.slice(0, 10)} ${first.slice(11, 19)} UTC`);
      // The table says the same instant, to the minute.
      expect(await page.locator('#runs').innerText()).toContain(`${first.slice(0, 10)} ${first.slice(11, 16)} UTC`);
    } finally {
      await context.close();
    }
  });

  it('every page fits 1400 and 800 pixels without the page scrolling sideways; the chart keeps unlike runs apart, its axes labelled with units', async () => {
    // A failed run (its five attempts, one job) and a cancelled one of results, among the succeeded ones.
    const at = EARLIER_RUNS[2]!.getTime() + 30 * 60_000;
    for (let i = 0; i < 5; i++) {
      await sql`insert into trainsync.runs (org, resource, job_id, mode, started_at, finished_at, status, error)
                values (${DEFAULT_ORG}, 'results', 'browser-failed', 'incremental', ${new Date(at + i * 60_000).toISOString()}, ${new Date(at + i * 60_000 + 4_000).toISOString()}, 'failed', 'the platform answered 503 Service Unavailable')`.execute(owner(h.app).db);
    }
    await sql`insert into trainsync.runs (org, resource, job_id, mode, started_at, finished_at, status, error)
              values (${DEFAULT_ORG}, 'results', 'browser-cancelled', 'full', ${new Date(at + 60 * 60_000).toISOString()}, ${new Date(at + 61 * 60_000).toISOString()}, 'cancelled', 'cancelled by olga (operator) in the console')`.execute(owner(h.app).db);
    const plan = await sql<{ id: string }>`select id from trainsync.held_plans order by id desc limit 1`.execute(owner(h.app).db);
    const run = await sql<{ id: string }>`select id from trainsync.runs where resource = 'results' and quarantined > 0 order by id desc limit 1`.execute(owner(h.app).db);
    const pages = ['/', '/runs?resource=results', `/runs/${run.rows[0]!.id}`, '/provisioning', `/provisioning/held/${plan.rows[0]!.id}`, '/people', '/people/repair', '/webhooks'];
    const page = operator.page;
    try {
      for (const width of [1400, 800]) {
        await page.setViewportSize({ width, height: 900 });
        for (const url of pages) {
          expect((await page.goto(`${base}${url}`))?.status(), url).toBe(200);
          if (url.startsWith('/runs?')) await page.waitForSelector('#runs-chart .uplot');
          // Evaluated in the page (a string: this project's types have no DOM).
          const overflow = (await page.evaluate('({ page: document.documentElement.scrollWidth, body: document.body.scrollWidth, window: window.innerWidth })')) as { page: number; body: number; window: number };
          expect(Math.max(overflow.page, overflow.body), `${url} at ${width} px`).toBeLessThanOrEqual(overflow.window);
          const shots = process.env.CONSOLE_SCREENSHOTS_WIDTHS;
          if (shots) await page.screenshot({ path: path.join(shots, `${url.replace(/[^a-z0-9]+/gi, '-')}-${width}.png`), fullPage: true });
        }
      }
      await visit(page, '/runs?resource=results');
      await page.waitForSelector('#runs-chart .uplot');
      const labels = await page.locator('#runs-chart .u-legend .u-series th').allInnerTexts();
      expect(labels.map((l) => l.trim())).toEqual(['time (UTC)', 'full: duration', 'full: rows', 'incremental: duration', 'incremental: rows', 'failed', 'cancelled']);
      // uPlot draws the axis labels on its canvas: what it was given to draw.
      const spec = JSON.parse((await page.locator('#runs-chart').getAttribute('data-chart'))!) as { axes: unknown };
      expect(spec.axes).toEqual({ x: 'run start (UTC)', y: 'duration (s)', y2: 'rows read (count)' });
      // The failed job is one row of the list, with its five attempts and its error.
      const failed = page.locator('#runs tr', { hasText: '503 Service Unavailable' });
      expect(await failed.count()).toBe(1);
      expect(await failed.locator('td.attempts').innerText()).toBe('5');
      // The day filter takes YYYY-MM-DD as typed, in a browser whose locale writes dates otherwise.
      expect(await page.locator('#day').getAttribute('type')).toBeNull();
      const day = EARLIER_RUNS[2]!.toISOString().slice(0, 10);
      await page.fill('#day', day);
      await page.locator('form.filters button[type=submit]').click();
      await page.waitForURL((u) => u.searchParams.get('day') === day);
      expect(await page.locator('#day').inputValue()).toBe(day);
    } finally {
      await page.setViewportSize({ width: 1200, height: 800 });
    }
  });

  it('draws assignment status by course as bars: a segment per count, as wide as the count, opening its people', async () => {
    expect(await visit(operator.page, '/people')).toBe(200);
    const cells = await operator.page.locator('#assignment-status a[id^=assign-]').evaluateAll((links) => links.map((a) => Number(a.textContent)));
    expect(cells.length).toBeGreaterThan(1);
    const segments = await operator.page.locator('#status-chart svg rect').evaluateAll((rects) =>
      rects.map((r) => ({ n: Number(r.getAttribute('data-count')), group: r.closest('g')!.getAttribute('data-group'), width: r.getBoundingClientRect().width, height: r.getBoundingClientRect().height })),
    );
    // Every non-zero count of the table is one drawn segment, and no uPlot line chart is left on the page.
    expect(segments.map((x) => x.n).sort()).toEqual([...cells].sort());
    expect(await operator.page.locator('#status-chart canvas, .uplot').count()).toBe(0);
    // Drawn at the same scale: width per assignment is the same for every segment, whatever its bar.
    const perOne = segments.map((x) => x.width / x.n);
    for (const w of perOne) expect(Math.abs(w - perOne[0]!)).toBeLessThan(0.05);
    for (const x of segments) expect(x.height).toBeGreaterThan(8);
    const largest = segments.reduce((a, b) => (b.n > a.n ? b : a));
    const link = operator.page.locator(`#status-chart svg g[data-group="${largest.group}"] rect[data-count="${largest.n}"]`).first();
    const status = await link.getAttribute('data-status');
    await link.click();
    await operator.page.waitForURL(/\/people\/assignments\?/);
    expect(new URL(operator.page.url()).searchParams.get('status')).toBe(status);
    expect(await operator.page.locator('#assignments tr').count()).toBe(1 + Math.min(largest.n, 50));
  });

  it('the Queues page (bull-board) renders behind the CSP and lists every queue, with a way back to the console', async () => {
    expect(await visit(viewer.page, '/queues')).toBe(200);
    await queuesListed(viewer.page);
    // Pinned over bull-board's page, where nothing covers it (a click that another element would catch fails).
    const back = viewer.page.locator('#trainsync-back');
    expect(await back.innerText()).toBe('← Console');
    // In the first screen, at its bottom left (below bull-board's list of queues, above its version line).
    const box = (await back.boundingBox())!;
    const screen = viewer.page.viewportSize()!;
    expect(box.x).toBeLessThan(40);
    expect(box.y + box.height).toBeLessThanOrEqual(screen.height);
    expect(box.y).toBeGreaterThan(screen.height / 2);
    await back.click();
    await viewer.page.waitForURL(`${base}/`);
    // Its pages may set a same-origin <base> (bull-board's own); nothing else is loosened, and other pages allow no base.
    const queuesCsp = (await viewer.context.request.get(`${base}/queues`)).headers()['content-security-policy']!;
    expect(queuesCsp).toContain("base-uri 'self'");
    expect(queuesCsp).toContain("script-src 'self'");
    expect(queuesCsp).not.toContain('unsafe-inline');
    expect((await viewer.context.request.get(`${base}/runs`)).headers()['content-security-policy']).toContain("base-uri 'none'");
  });

  it("an operator's bull-board action is audited with user and role; the Provisioning page lists every change made in the console", async () => {
    const webhooks = h.app.queue.queues[WEBHOOK_QUEUE];
    const url = `/queues/api/queues/${WEBHOOK_QUEUE}/pause`;
    try {
      const pause = await operator.context.request.put(`${base}${url}`, { headers: { 'sec-fetch-site': 'same-origin' }, maxRedirects: 0 });
      expect(pause.status()).toBe(200);
      expect(await webhooks.isPaused()).toBe(true);
    } finally {
      await webhooks.resume();
    }
    // One queue serves every organisation: the row names none.
    expect(await auditRows('queues PUT')).toEqual([{ org: null, username: OPERATOR.name, role: 'operator', target: url }]);
    // Every change of the tests above, each by the operator; the viewer's refused attempts wrote none.
    const all = await sql<{ username: string; role: string; action: string }>`select distinct username, role, action from trainsync.console_audit order by action`.execute(owner(h.app).db);
    expect(all.rows).toEqual(['approve-held-plan', 'cancel-sync', 'queues PUT', 'reconcile-fix', 'reject-held-plan', 'retry-action'].map((action) => ({ username: OPERATOR.name, role: 'operator', action })));
    expect(await visit(viewer.page, '/provisioning')).toBe(200);
    const shown = await viewer.page.locator('#console-audit').innerText();
    for (const { action } of all.rows) expect(shown).toMatch(new RegExp(`${OPERATOR.name}\\s+operator\\s+${action}`));
  });

  it('no secret on any page: API key, webhook secret, password hashes, passwords, the session token', async () => {
    for (const url of ['/', '/runs', '/provisioning', '/people', '/people?by=department', '/people/repair', '/webhooks', '/queues']) expect(await visit(operator.page, url)).toBe(200);
    const token = (await operator.context.cookies()).find((c) => c.name === 'trainsync_console')!.value;
    const secrets = [h.sim.apiKey, WEBHOOK_SECRET, Buffer.from(WEBHOOK_SECRET, 'base64').toString('utf8'), OPERATOR.password, VIEWER.password, token, ...hashes, ...hashes.map((x) => x.split('$')[5]!)];
    expect(pagesSeen.size).toBeGreaterThanOrEqual(9);
    for (const [url, text] of pagesSeen) for (const secret of secrets) expect(text.includes(secret), `${url} shows a secret`).toBe(false);
  });

  it('an expired session is refused and sends the browser to the log-in page; logging out ends the session', async () => {
    await sql`update trainsync.console_sessions set expires_at = now() - interval '1 second' where username = 'vera'`.execute(owner(h.app).db);
    await viewer.page.goto(`${base}/provisioning`);
    expect(viewer.page.url()).toBe(`${base}/login`);
    const api = await viewer.context.request.get(`${base}/queues/api/queues`, { maxRedirects: 0 });
    expect(api.status()).toBe(401);

    await operator.page.goto(`${base}/`);
    await operator.page.click('form.logout button');
    await operator.page.waitForURL(`${base}/login`);
    const left = await sql<{ n: number }>`select count(*)::int as n from trainsync.console_sessions where username = 'olga' and expires_at > now()`.execute(owner(h.app).db);
    expect(left.rows[0]!.n).toBe(0);
  });
});
