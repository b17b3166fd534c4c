import { owner } from './helpers/owner.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { loadConfig } from '../src/config.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * The console with two organisations, in a real browser: the selector lists both, and
 * a page scoped to one shows none of the other's rows (runs, webhook events), nor opens
 * its run by id; "all" shows both, each row with its organisation. Runs and events are
 * written straight into the warehouse: what matters here is what each page reads.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OPERATOR = { name: 'olga', password: 'operator-pass-1234' };

let sim: RunningSimulator;
let database: TestDatabase;
let prefix: string;
let dir: string;
let app: App;
let server: ConsoleServer;
let browser: Browser;
let page: Page;
let base: string;
const runIds: Record<'north' | 'south', number> = { north: 0, south: 0 };

beforeAll(async () => {
  sim = await startSimulator({ seed: 31, sizes: { users: 5, courses: 2, results: 5 } });
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-console-orgs-'));
  const file = path.join(dir, 'orgs.json');
  writeFileSync(
    file,
    JSON.stringify({
      organisations: [
        { slug: 'north', name: 'North', apiUrl: sim.url, apiKey: { env: 'NORTH_KEY' } },
        { slug: 'south', name: 'South', apiUrl: sim.url, apiKey: { env: 'SOUTH_KEY' } },
      ],
    }),
  );
  const hash = await hashConsolePassword(OPERATOR.password, { N: 2 ** 14, r: 8, p: 1 });
  const config = loadConfig({
    TRAINSYNC_ORGS_FILE: file,
    NORTH_KEY: sim.apiKey,
    SOUTH_KEY: sim.apiKey,
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_CONSOLE_USERS: `${OPERATOR.name}:operator:${hash}`,
    TRAINSYNC_CONSOLE_PORT: '0',
    LOG_LEVEL: 'warn',
  });
  const log = createLogger(config.LOG_LEVEL, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
  app = await createApp(config, log, { jobs: allJobs });
  for (const [org, resource] of [
    ['north', 'courses'],
    ['south', 'users'],
  ] as const) {
    const { rows } = await sql<{ id: number }>`
      insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, inserted, note)
      values (${org}, ${resource}, 'full', now() - interval '1 hour', now() - interval '59 minutes', 'succeeded', 7, ${`run-of-${org}`})
      returning id`.execute(owner(app).db);
    runIds[org] = rows[0]!.id;
    await sql`insert into trainsync.webhook_events (org, event_id, event_type, payload, processed_at, outcome)
              values (${org}, ${`event-of-${org}`}, 'TEST_EVENT', '{}'::jsonb, now(), 'test')`.execute(owner(app).db);
  }
  server = (await startConsole({ config, scopes: app.scopes, queue: app.queue, log, health: async () => ({}), repair: (org) => provisionDeps(app, org) }))!;
  base = `http://127.0.0.1:${server.port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-sync'] });
  page = await (await browser.newContext()).newPage();
  await page.goto(`${base}/login`);
  await page.fill('input[name=username]', OPERATOR.name);
  await page.fill('input[name=password]', OPERATOR.password);
  await page.click('#login button[type=submit]');
  await page.waitForURL(`${base}/`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await app?.close();
  await sim?.close();
  await database?.drop();
  if (prefix) await dropPrefix(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Chooses an organisation ('' for all) in the selector, from the page at `url`; back on that page after. */
async function choose(url: string, org: string): Promise<void> {
  await page.goto(`${base}${url}`);
  await page.selectOption('#org-select', org);
  await Promise.all([page.waitForURL(`${base}${url}`), page.click('#org-apply')]);
}

describe('the console with two organisations', () => {
  it('the selector lists both organisations, and "all" is the start', async () => {
    await page.goto(`${base}/`);
    const options = await page.locator('#org-select option').evaluateAll((els) => els.map((e) => [e.getAttribute('value'), e.textContent]));
    expect(options).toEqual([
      ['', 'all organisations'],
      ['north', 'North (north)'],
      ['south', 'South (south)'],
    ]);
    expect(await page.locator('#scope').innerText()).toBe('All 2 organisations');
    await page.goto(`${base}/runs`);
    const runs = await page.locator('#runs').innerText();
    expect(runs).toContain('north');
    expect(runs).toContain('south');
  });

  it("a page for north shows none of south's runs or webhook events, and south's run is not found", async () => {
    await choose('/runs', 'north');
    expect(await page.locator('#scope').innerText()).toBe('Organisation North (north)');
    const runs = await page.locator('#runs').innerText();
    expect(runs).toContain(`#${runIds.north}`);
    expect(runs).not.toContain(`#${runIds.south}`);
    expect(runs).not.toContain('south');
    expect((await page.goto(`${base}/runs/${runIds.north}`))?.status()).toBe(200);
    expect(await page.locator('#run-org').innerText()).toBe('north');
    expect((await page.goto(`${base}/runs/${runIds.south}`))?.status()).toBe(404);
    await page.goto(`${base}/webhooks`);
    const events = await page.locator('#events').innerText();
    expect(events).toContain('event-of-north');
    expect(events).not.toContain('event-of-south');
    await page.goto(`${base}/`);
    const overview = await page.locator('#last-runs').innerText();
    expect(overview).toContain('courses');
    expect(overview).not.toContain('users');
  });

  it('south in turn, and back to all; a per-organisation page asks for one under "all"', async () => {
    await choose('/webhooks', 'south');
    const events = await page.locator('#events').innerText();
    expect(events).toContain('event-of-south');
    expect(events).not.toContain('event-of-north');
    await choose('/people', '');
    expect(await page.locator('#scope').innerText()).toBe('All 2 organisations');
    expect(await page.locator('#choose-org').innerText()).toMatch(/one organisation at a time/);
  });

  it('refuses a choice of an organisation not configured (the scope falls back to all) and a redirect off the console', async () => {
    const token = await page.locator('input[name=_csrf]').first().inputValue();
    const answer = await page.context().request.post(`${base}/org`, { form: { _csrf: token, org: 'east', back: '//evil.example/' }, maxRedirects: 0 });
    expect(answer.status()).toBe(302);
    expect(answer.headers().location).toBe('/');
    await page.goto(`${base}/`);
    expect(await page.locator('#scope').innerText()).toBe('All 2 organisations');
  });
});
