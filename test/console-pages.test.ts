import { owner } from './helpers/owner.ts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVISIONING_PAGE_SIZE } from '../src/console/routes/queries.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { consoleSession, type ConsoleSession } from './helpers/console-http.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * The console's pages as HTML over HTTP (no browser): one way of showing a moment on
 * every page (UTC, labelled, to the minute; how far away where it helps), the audit
 * trail's before → after as a table of fields, the Provisioning page's lists paged with
 * links that keep the filters, and the Queues page's way back. Rows are written straight
 * into the warehouse: what matters here is what each page shows of them.
 */

const USER = { name: 'paula', password: 'pages-pass-1234' };
const RUN_STARTED = '2026-11-24T07:00:44.123Z';
const ROWS = 45;

let h: SyncHarness;
let server: ConsoleServer;
let base: string;
let session: ConsoleSession;


async function get(path: string): Promise<string> {
  const answer = await session.get(path);
  expect(answer.status, path).toBe(200);
  return answer.text;
}

/** What a reader sees: the text without tags (attributes such as datetime="…" are not read). */
const visible = (page: string): string => page.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();

/** The data rows (not the header row) of the table with this id. */
function tableRows(page: string, id: string): string[] {
  const table = new RegExp(`<table id="${id}">([\\s\\S]*?)</table>\\s*(?:<p class="pager"|</section>)`).exec(page)?.[1];
  expect(table, `table #${id}`).toBeDefined();
  // Nested tables (before → after) are inside a row: count the outer rows only.
  const outer = table!.replace(/<table class="change">[\s\S]*?<\/table>/g, '');
  return outer.split('<tr').slice(2);
}

/** The pager of one list: its newer and older links, unescaped. */
function pagerOf(page: string, param: string): { prev?: string; next?: string } {
  const pager = new RegExp(`<p class="pager" data-list="${param}">([\\s\\S]*?)</p>`).exec(page)?.[1] ?? '';
  const href = (rel: string): string | undefined => new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(pager)?.[1]?.replace(/&amp;/g, '&');
  return { prev: href('prev'), next: href('next') };
}

beforeAll(async () => {
  const hash = await hashConsolePassword(USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({
    simulator: { seed: 9, sizes: { users: 3, courses: 1, results: 3 } },
    env: { TRAINSYNC_CONSOLE_USERS: `${USER.name}:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0' },
  });
  const db = owner(h.app).db;
  await sql`insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, inserted)
            values (${DEFAULT_ORG}, 'courses', 'full', ${RUN_STARTED}, ${RUN_STARTED}::timestamptz + interval '90 seconds', 'succeeded', 3)`.execute(db);
  // 45 of each list, a minute apart, newest last; the newest action is a drift repair's enable.
  for (let i = 1; i <= ROWS; i++) {
    const at = new Date(Date.parse('2026-11-20T10:00:00Z') + i * 60_000).toISOString();
    const hash = i.toString(16).padStart(64, '0');
    await sql`insert into trainsync.feeds (org, hash, path, format, mode, rows, errors, actions, created_at)
              values (${DEFAULT_ORG}, ${hash}, ${`/feeds/feed-${i}.csv`}, 'csv', 'full', 10, 0, 1, ${at})`.execute(db);
    await sql`insert into trainsync.held_plans (org, feed_hash, file, mode, reason, message, actions, people, disables, feed, status, created_at)
              values (${DEFAULT_ORG}, ${hash}, ${`plan-feed-${i}.csv`}, 'full', 'max-disable', 'held', '[]'::jsonb, '[]'::jsonb, 1, '{}'::jsonb, 'superseded', ${at})`.execute(db);
    await sql`insert into trainsync.console_audit (org, username, role, action, target, at)
              values (${DEFAULT_ORG}, 'olga', 'operator', 'retry-action', ${`target-${i}`}, ${at})`.execute(db);
    const repair = i === ROWS;
    await sql`insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, before, after, status, attempts, updated_at)
              values (${DEFAULT_ORG}, ${`action-${i}`}, ${`E${String(i).padStart(4, '0')}`}, ${`person${i}@example.test`}, ${repair ? 'enable' : 'disable'},
                      ${JSON.stringify(repair ? { active: false } : { active: true })}::jsonb,
                      ${JSON.stringify(repair ? { active: true, platformUserId: 'u-45', repair: 'platform shows no access; HR says active' } : { active: false })}::jsonb,
                      ${i % 3 === 0 ? 'failed' : 'succeeded'}, 1, ${at})`.execute(db);
  }
  server = (await startConsole({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: () => { throw new Error('not used here'); } }))!;
  base = `http://127.0.0.1:${server.port}`;
  session = await consoleSession(base, USER);
});

afterAll(async () => {
  await server?.close();
  await h?.close();
});

describe('console pages', () => {
  it('shows every moment one way, UTC to the minute and labelled, never a raw ISO stamp', async () => {
    await h.app.queue.upsertSchedule({ id: 'sync-courses', org: DEFAULT_ORG, job: 'sync-courses', queue: 'sync', pattern: '0 2 * * *' });
    const next = (await h.app.queue.schedules()).find((s) => s.id === 'sync-courses')!.next!;
    const pages = { overview: await get('/'), runs: await get('/runs'), provisioning: await get('/provisioning'), webhooks: await get('/webhooks') };
    // The run's start, as every page shows it: to the minute, in UTC, the exact instant kept for machines and tooltips.
    for (const page of [pages.overview, pages.runs]) expect(page).toContain(`<time datetime="${RUN_STARTED}" title="${RUN_STARTED}">2026-11-24 07:00 UTC</time>`);
    // Next scheduled: when, and how far from now (the cron line is 02:00 UTC).
    const nextCell = /<td class="next">([\s\S]*?)<\/td>/.exec(pages.overview)?.[1] ?? '';
    expect(nextCell).toContain(`datetime="${next}"`);
    expect(visible(nextCell)).toMatch(/^\d{4}-\d{2}-\d{2} 02:00 UTC \(in \d+ (min|h)\)$/);
    expect(visible(pages.overview)).toMatch(/2026-11-24 07:00 UTC\s+\((\d+ d ago|in \d+ d)\)/);
    for (const [name, page] of Object.entries(pages)) {
      const text = visible(page);
      expect(text, name).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
      expect(text, name).not.toMatch(/:\d{2}\.\d{3}Z/);
    }
    const run = await get(`/runs/${/href="\/runs\/(\d+)"/.exec(pages.runs)![1]}`);
    expect(visible(run)).toMatch(/started\s+2026-11-24 07:00 UTC\s+finished\s+2026-11-24 07:02 UTC/);
  });

  it('the audit trail shows before → after as a table of fields, the changed ones marked, the reason of a repair under it', async () => {
    const page = await get('/provisioning');
    const first = tableRows(page, 'actions')[0]!;
    expect(first).toContain('person45@example.test');
    const change = /<table class="change">([\s\S]*?)<\/table>/.exec(page)![1]!;
    expect(change).toContain('<tr><th>field</th><th>before</th><th>after</th></tr>');
    expect(change).toContain('<tr class="changed"><th scope="row">active</th><td><del>false</del></td><td><ins>true</ins></td></tr>');
    // A field the action added: nothing before it.
    expect(change).toContain('<tr class="changed"><th scope="row">platformUserId</th><td>&mdash;</td><td><ins>u-45</ins></td></tr>');
    expect(change).not.toContain('repair');
    expect(page).toContain('<p class="why">Why: platform shows no access; HR says active</p>');
    // No JSON on the page for a reader to decode.
    expect(visible(page)).not.toMatch(/\{"active"/);
  });

  it('pages every list of the Provisioning page; each pager keeps the filters and the other lists’ pages', async () => {
    const page = await get('/provisioning');
    for (const id of ['held-plans', 'feeds', 'actions', 'console-audit']) expect(tableRows(page, id), id).toHaveLength(PROVISIONING_PAGE_SIZE);
    for (const param of ['hpage', 'fpage', 'page', 'cpage']) expect(pagerOf(page, param).prev, param).toBeUndefined();

    // Filtered to succeeded actions, held plans on their second page: the audit trail's "older" keeps both.
    const filtered = await get('/provisioning?status=succeeded&hpage=2');
    const heldPage2 = tableRows(filtered, 'held-plans').map((row) => /plan-feed-(\d+)\.csv/.exec(row)![1]);
    expect(heldPage2).toEqual(Array.from({ length: PROVISIONING_PAGE_SIZE }, (_, i) => String(ROWS - PROVISIONING_PAGE_SIZE - i)));
    const older = pagerOf(filtered, 'page').next!;
    expect(older).toBe('/provisioning?status=succeeded&hpage=2&page=2#audit');
    const succeeded = Array.from({ length: ROWS }, (_, i) => ROWS - i).filter((i) => i % 3 !== 0);
    const second = await get(older.replace(/#.*$/, ''));
    expect(tableRows(second, 'actions').map((row) => /person(\d+)@/.exec(row)![1])).toEqual(succeeded.slice(PROVISIONING_PAGE_SIZE, 2 * PROVISIONING_PAGE_SIZE).map(String));
    expect(tableRows(second, 'held-plans').map((row) => /plan-feed-(\d+)\.csv/.exec(row)![1])).toEqual(heldPage2);
    expect(pagerOf(second, 'page').prev).toBe('/provisioning?status=succeeded&hpage=2#audit');
    // The held plans' own pager, from there, keeps the filter and the audit trail's page.
    expect(pagerOf(second, 'hpage')).toEqual({ prev: '/provisioning?status=succeeded&page=2#plans', next: '/provisioning?status=succeeded&page=2&hpage=3#plans' });
    // The last page of a list: five left, no "older".
    const last = await get('/provisioning?fpage=3&cpage=3');
    expect(tableRows(last, 'feeds')).toHaveLength(ROWS - 2 * PROVISIONING_PAGE_SIZE);
    expect(tableRows(last, 'console-audit')).toHaveLength(ROWS - 2 * PROVISIONING_PAGE_SIZE);
    expect(pagerOf(last, 'fpage')).toEqual({ prev: '/provisioning?cpage=3&fpage=2#feeds-read', next: undefined });
    // A new search keeps the other lists' pages too.
    expect(last).toMatch(/<input type="hidden" name="fpage" value="3"><input type="hidden" name="cpage" value="3">/);
  });

  it('the Queues page (bull-board) carries a link back to the console, styled from /assets (no inline style)', async () => {
    const queues = await get('/queues');
    expect(queues).toContain('<a id="trainsync-back" href="/">&larr; Console</a>');
    expect(queues).toMatch(/<link rel="stylesheet" href="\/assets\/queues\.css"><\/head>/);
    expect(queues).toContain('"miscLinks":[{"text":"← Back to the trainsync console","url":"/"}]');
    const css = await fetch(`${base}/assets/queues.css`);
    expect(css.status).toBe(200);
    expect(await css.text()).toContain('#trainsync-back');
    // Its API answers are bull-board's own, untouched.
    const api = await session.get('/queues/api/queues');
    expect(api.status).toBe(200);
    expect(() => JSON.parse(api.text) as unknown).not.toThrow();
    expect(api.text).not.toContain('trainsync-back');
  });
});
