import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { loadConfig } from '../src/config.ts';
import { searchOrgs } from '../src/console/org-search-form.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { consoleSession, visible, type ConsoleSession } from './helpers/console-http.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * The console's organisation selector with 1,000 organisations, over HTTP against a real
 * console, Postgres and Redis: every page carries a search form instead of a 1,000-option
 * select, `GET /orgs?q=` lists at most 20 matches by slug or name (plain forms: no script
 * needed), a match chosen scopes the pages. zed, limited to 31 organisations, searches only
 * those: no answer of the search names another, and choosing another answers 404.
 */

const N = 1_000;
const slug = (i: number): string => `o${String(i).padStart(4, '0')}`;
/** zed's organisations: o0001…o0030 and o0500. */
const ZEDS = [...Array.from({ length: 30 }, (_, k) => slug(k + 1)), slug(500)];
const OLGA = { name: 'olga', password: 'olga-pass-1234' };
const ZED = { name: 'zed', password: 'zed-pass-1234' };

let database: TestDatabase;
let prefix: string;
let dir: string;
let app: App;
let server: ConsoleServer;
let olga: ConsoleSession;
let zed: ConsoleSession;

beforeAll(async () => {
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-console-org-search-'));
  const file = path.join(dir, 'orgs.json');
  writeFileSync(file, JSON.stringify({ organisations: Array.from({ length: N }, (_, i) => ({ slug: slug(i + 1), name: `Client ${i + 1} Ltd`, apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'ORG_KEY' } })) }));
  const cost = { N: 2 ** 12, r: 8, p: 1 };
  const [olgaHash, zedHash] = await Promise.all([OLGA, ZED].map((u) => hashConsolePassword(u.password, cost)));
  const config = loadConfig({
    TRAINSYNC_ORGS_FILE: file,
    ORG_KEY: 'key-not-used-here',
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_CONSOLE_USERS: `${OLGA.name}:operator:${olgaHash},${ZED.name}:viewer:${zedHash}:${ZEDS.join('+')}`,
    TRAINSYNC_CONSOLE_PORT: '0',
    LOG_LEVEL: 'warn',
  });
  const log = createLogger(config.LOG_LEVEL, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
  app = await createApp(config, log, { jobs: allJobs, migrate: true });
  server = (await startConsole({ config, scopes: app.scopes, queue: app.queue, log, health: async () => ({}), repair: (org) => provisionDeps(app, org) }))!;
  const base = `http://127.0.0.1:${server.port}`;
  [olga, zed] = await Promise.all([consoleSession(base, OLGA), consoleSession(base, ZED)]);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await app?.close();
  await database?.drop();
  if (prefix) await dropPrefix(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function page(session: ConsoleSession, at: string): Promise<string> {
  const answer = await session.get(at);
  expect(answer.status, at).toBe(200);
  return answer.text;
}

/** The slugs a page names anywhere (markup included). */
const slugsIn = (text: string): Set<string> => new Set(text.match(/\bo\d{4}\b/g) ?? []);

describe('the organisation selector with 1,000 organisations', () => {
  it('is a search form on every page, not a 1,000-option select', async () => {
    const runs = await page(olga, '/runs');
    expect(runs).toMatch(/<form method="get" action="\/orgs" class="org-select" id="org-search" role="search"><input type="hidden" name="back" value="\/runs">/);
    expect(runs).not.toContain('<select name="org"');
    expect(slugsIn(runs).size).toBe(0);
    expect(visible(runs)).toContain(`All ${N} organisations`);
  });

  it('answers ?q= with at most 20 matches by slug or name, each a form that chooses it', async () => {
    const bySlug = await page(olga, '/orgs?q=O09&back=/runs');
    expect(visible(bySlug)).toContain('100 matches for “O09”; the first 20 below: refine the search for the others.');
    expect([...slugsIn(bySlug)]).toEqual(Array.from({ length: 20 }, (_, k) => slug(900 + k)));
    expect(bySlug).toContain(`<form method="post" action="/org" class="inline"><input type="hidden" name="_csrf" value="`);
    expect(bySlug).toContain(`<input type="hidden" name="back" value="/runs"><input type="hidden" name="org" value="o0900"><button type="submit" id="org-o0900">Client 900 Ltd (o0900)</button>`);
    const byName = await page(olga, `/orgs?q=${encodeURIComponent('client 77')}`);
    expect(visible(byName)).toContain('11 matches for “client 77”.');
    expect([...slugsIn(byName)]).toEqual([77, ...Array.from({ length: 10 }, (_, k) => 770 + k)].map(slug));
    const none = await page(olga, `/orgs?q=${encodeURIComponent('<script>x')}`);
    expect(none).toContain('0 matches for “&lt;script&gt;x”.');
    expect(none).not.toContain('<script>x');
  });

  it('a match chosen scopes the pages; the way back is a path of the console only', async () => {
    const chose = await olga.post('/org', { org: slug(777), back: '/runs' }, `/orgs?q=${slug(777)}&back=/runs`);
    expect(chose.status).toBe(302);
    expect(visible(await page(olga, '/runs'))).toContain(`Organisation Client 777 Ltd (${slug(777)})`);
    const evil = await page(olga, '/orgs?q=o0001&back=//evil.example/');
    expect(evil).toContain('<input type="hidden" name="back" value="/">');
    await olga.post('/org', { org: '', back: '/' }, '/orgs');
    expect(visible(await page(olga, '/'))).toContain(`All ${N} organisations`);
  });

  it('a user limited to some searches only theirs, and choosing another answers 404', async () => {
    const all = await page(zed, '/orgs');
    expect(visible(all)).toContain(`${ZEDS.length} organisations; the first 20 below`);
    const five = await page(zed, '/orgs?q=o05');
    expect(visible(five)).toContain('1 match for “o05”.');
    expect([...slugsIn(five)]).toEqual([slug(500)]);
    for (const q of ['o09', 'o', 'client', 'Ltd', '99', slug(31)]) {
      // The text searched for is echoed back; anything else named is one of zed's.
      const answer = (await page(zed, `/orgs?q=${encodeURIComponent(q)}`)).replaceAll(q, '');
      for (const named of slugsIn(answer)) expect(ZEDS, `${q}: ${named}`).toContain(named);
    }
    expect(visible(await page(zed, `/orgs?q=${slug(999)}`))).toContain(`0 matches for “${slug(999)}”.`);
    const refused = await zed.post('/org', { org: slug(999), back: '/' }, '/orgs');
    expect(refused.status).toBe(404);
    expect(slugsIn(await page(zed, '/')).size).toBe(0);
  });

  it('searchOrgs: every match contains the text, in the file’s order, capped', () => {
    const scope = { orgs: Array.from({ length: 50 }, (_, k) => ({ slug: slug(k + 1), name: `Client ${k + 1}` })) };
    expect(searchOrgs(scope, ' CLIENT 1', 5)).toEqual({ matches: [1, 10, 11, 12, 13].map((i) => ({ slug: slug(i), name: `Client ${i}` })), total: 11 });
    expect(searchOrgs(scope, '').total).toBe(50);
  });
});
