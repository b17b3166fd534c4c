import { owner } from './helpers/owner.ts';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import type { ChartSpec } from '../src/console/pages/format.ts';
import { consoleSession, visible, type ConsoleSession } from './helpers/console-http.ts';
import { feedDir, rowsFromState, toCsv } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * The console's history reads as a history (over HTTP, no browser): one job's attempts are
 * one run with its error; the chart keeps unlike runs apart and labels its axes with units;
 * an unreadable feed says so and why; the held plan's page speaks for itself (no command-line
 * options); approving answers 303 to the plan's page, which shows the result once; day filters
 * are YYYY-MM-DD, a bad one answered 400 with why; and hostile filters never get a 5xx.
 */

const USER = { name: 'hilda', password: 'history-pass-1234' };
const DAY = '2026-11-24';
let h: SyncHarness;
let files: ReturnType<typeof feedDir>;
let server: ConsoleServer;
let session: ConsoleSession;

const db = () => owner(h.app).db;

async function get(path: string): Promise<string> {
  const answer = await session.get(path);
  expect(answer.status, path).toBe(200);
  return answer.text;
}

/** The data rows (not the header row) of the table with this id. */
function tableRows(page: string, id: string): string[] {
  const table = new RegExp(`<table id="${id}">([\\s\\S]*?)</table>`).exec(page)?.[1];
  expect(table, `table #${id}`).toBeDefined();
  return table!.split('<tr').slice(2);
}

/** A run's row as a sync attempt writes it. */
async function attempt(row: { resource: string; jobId: string | null; mode: string; at: string; seconds: number; status: string; error?: string; inserted?: number }): Promise<number> {
  const { rows } = await sql<{ id: string }>`
    insert into trainsync.runs (org, resource, job_id, mode, started_at, finished_at, status, inserted, requests, error)
    values (${DEFAULT_ORG}, ${row.resource}, ${row.jobId}, ${row.mode}, ${row.at}, ${row.at}::timestamptz + make_interval(secs => ${row.seconds}), ${row.status}, ${row.inserted ?? 0}, 2, ${row.error ?? null})
    returning id`.execute(db());
  return Number(rows[0]!.id);
}

const minute = (n: number): string => new Date(Date.parse(`${DAY}T06:00:00Z`) + n * 60_000).toISOString();

beforeAll(async () => {
  const hash = await hashConsolePassword(USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({
    simulator: { seed: 31, sizes: { users: 30, courses: 1, results: 2 } },
    env: { TRAINSYNC_CONSOLE_USERS: `${USER.name}:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0' },
  });
  files = feedDir();
  server = (await startConsole({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: (org) => provisionDeps(h.app, org) }))!;
  session = await consoleSession(`http://127.0.0.1:${server.port}`, USER);
});

afterAll(async () => {
  await server?.close();
  await h?.close();
  files?.cleanup();
});

describe('the console history', () => {
  it("one job's five failed attempts are one run, with its error; the run's page lists the attempts", async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await attempt({ resource: 'groups', jobId: '41', mode: 'incremental', at: minute(i * 2), seconds: 3, status: 'failed', error: `attempt ${i + 1}: the platform answered 503 Service Unavailable` }));
    // Then another job, and later a job whose id was used before (its queue emptied): runs of their own.
    await attempt({ resource: 'groups', jobId: '42', mode: 'full', at: minute(20), seconds: 30, status: 'succeeded', inserted: 5 });
    await attempt({ resource: 'groups', jobId: '41', mode: 'incremental', at: minute(40), seconds: 4, status: 'succeeded', inserted: 1 });

    const page = await get('/runs?resource=groups');
    const rows = tableRows(page, 'runs');
    expect(rows).toHaveLength(3);
    const failed = rows[2]!;
    expect(failed).toContain(`href="/runs/${ids[0]}"`);
    expect(failed).toContain('<td class="attempts">5</td>');
    expect(failed).toMatch(/<td class="run-error"[^>]*>attempt 5: the platform answered 503 Service Unavailable<\/td>/);
    expect(page).toMatch(/<th>error<\/th><\/tr>/);
    // The requests of every attempt add up.
    expect(visible(failed)).toMatch(/failed 5 .* 10 /);
    expect(rows[0]).toContain('<td class="attempts">1</td>');

    // Any attempt's id opens the run, with each attempt and its error.
    const run = await get(`/runs/${ids[3]}`);
    expect(run).toContain('<dd id="run-attempts">5</dd>');
    expect(run).toContain('<dd id="run-error">attempt 5: the platform answered 503 Service Unavailable</dd>');
    expect(tableRows(run, 'attempts').map((r) => /attempt (\d): the platform/.exec(r)?.[1])).toEqual(['1', '2', '3', '4', '5']);
    // The status filter reads the run's outcome, not an attempt's.
    expect(tableRows(await get('/runs?resource=groups&status=failed'), 'runs')).toHaveLength(1);
  });

  it('the chart keeps failed, cancelled, full and incremental runs apart, and its axes carry units', async () => {
    await attempt({ resource: 'courses', jobId: '1', mode: 'full', at: minute(100), seconds: 60, status: 'succeeded', inserted: 50 });
    await attempt({ resource: 'courses', jobId: '2', mode: 'incremental', at: minute(110), seconds: 5, status: 'succeeded', inserted: 2 });
    await attempt({ resource: 'courses', jobId: '3', mode: 'incremental', at: minute(120), seconds: 1, status: 'failed', error: 'boom' });
    await attempt({ resource: 'courses', jobId: '4', mode: 'full', at: minute(130), seconds: 2, status: 'cancelled', error: 'cancelled by hilda' });
    await attempt({ resource: 'courses', jobId: '5', mode: 'incremental', at: minute(140), seconds: 6, status: 'succeeded', inserted: 3 });
    await attempt({ resource: 'courses', jobId: '6', mode: 'full', at: minute(150), seconds: 70, status: 'succeeded', inserted: 51 });

    const page = await get('/runs?resource=courses');
    const attr = /<div class="chart" id="runs-chart" data-chart="([^"]+)"/.exec(page)![1]!;
    const spec = JSON.parse(attr.replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>')) as ChartSpec;
    expect(spec.axes).toEqual({ x: 'run start (UTC)', y: 'duration (s)', y2: 'rows read (count)' });
    const byLabel = new Map(spec.series.map((s) => [s.label, s]));
    expect([...byLabel.keys()].sort()).toEqual(['cancelled', 'failed', 'full: duration', 'full: rows', 'incremental: duration', 'incremental: rows']);
    // Each run is a point of one series only, and a line joins only runs of one kind.
    expect(spec.series.filter((s) => s.axis === 'y').map((s) => s.values.filter((v) => v !== null).length)).toEqual([2, 2, 1, 1]);
    expect(byLabel.get('full: duration')!.values).toEqual([60, null, null, null, null, 70]);
    expect(byLabel.get('incremental: duration')!.values).toEqual([null, 5, null, null, 6, null]);
    expect(byLabel.get('failed')).toMatchObject({ draw: 'points', values: [null, null, 1, null, null, null] });
    expect(byLabel.get('cancelled')).toMatchObject({ draw: 'points', values: [null, null, null, 2, null, null] });
    expect(byLabel.get('full: rows')).toMatchObject({ axis: 'y2', dash: true });
  });

  it('an unreadable feed is listed as unreadable, with why, never as a dry run', async () => {
    const file = files.write('hr-garbled.csv', 'this is not,a feed\n1,2\n');
    const result = await provisionFeed(provisionDeps(h.app, DEFAULT_ORG), { file, mode: 'full', dryRun: true, force: false });
    expect(result.plan.refused?.reason).toBe('feed-errors');
    const page = await get('/provisioning');
    const row = tableRows(page, 'feeds').find((r) => r.includes('hr-garbled.csv'))!;
    expect(row).toBeDefined();
    const outcome = visible(/<td class="feed-outcome[^"]*">([\s\S]*?)<\/td>/.exec(row)![1]!);
    expect(outcome).toMatch(/^unreadable \(dry run\): \S/);
    expect(outcome).not.toMatch(/^dry run/);
    expect(outcome.length).toBeGreaterThan('unreadable (dry run): '.length + 10);
  });

  it("the held plan's page names no command-line option; approving answers 303 to the plan's page, which shows the result once", async () => {
    // The applied state: every account adopted by an unchanged feed; then 8 leavers, past the limit of 5.
    await provisionFeed(provisionDeps(h.app, DEFAULT_ORG), { file: files.write('hr-all.csv', toCsv(rowsFromState(h.sim.state))), mode: 'full', dryRun: false, force: false });
    const rows = rowsFromState(h.sim.state);
    for (const r of rows.filter((x) => x.status === 'active').slice(0, 8)) r.status = 'terminated';
    const held = await provisionFeed(provisionDeps(h.app, DEFAULT_ORG), { file: files.write('hr-leavers.csv', toCsv(rows)), mode: 'full', dryRun: false, force: false });
    const id = held.heldPlanId!;
    expect(id).toBeGreaterThan(0);
    const stored = await sql<{ message: string }>`select message from trainsync.held_plans where id = ${id}`.execute(db());
    expect(stored.rows[0]!.message).toMatch(/--/);

    const planPage = await get(`/provisioning/held/${id}`);
    expect(visible(planPage)).not.toMatch(/(^|\s|\()--[a-z]/);
    expect(planPage).not.toMatch(/--[a-z]/);
    expect(visible(planPage)).toMatch(/more than the limit of 5/);
    expect(visible(planPage)).toMatch(/types the number of people who lose access and approves it/);

    const approved = await session.post(`/provisioning/held/${id}/approve`, { confirm: '8' }, `/provisioning/held/${id}`);
    expect(approved.status).toBe(303);
    expect(approved.location).toBe(`/provisioning/held/${id}`);
    const after = await session.get(approved.location!);
    expect(after.status).toBe(200);
    expect(visible(/<p class="ok" id="outcome"[^>]*>([\s\S]*?)<\/p>/.exec(after.text)?.[1] ?? '')).toBe(`Plan #${id} approved: 8 actions enqueued; the workers apply them (see the audit trail).`);
    // Once: a reload shows the plan, decided, without the message (and posts nothing).
    const reload = await get(`/provisioning/held/${id}`);
    expect(reload).not.toContain('id="outcome"');
    expect(reload).toContain('approved');
  });

  it('day filters take and show YYYY-MM-DD; a bad day is answered 400 with why', async () => {
    const provisioning = await get('/provisioning');
    const input = /<input name="day"[^>]*>/.exec(provisioning)![0];
    expect(input).not.toContain('type="date"');
    expect(input).toContain('placeholder="YYYY-MM-DD"');
    expect(input).toContain('pattern="[0-9]{4}-[0-9]{2}-[0-9]{2}"');

    for (const path of ['/provisioning?day=12%2F07%2F2026', '/runs?day=2026-02-30', '/runs?day=2026-1-5', '/provisioning?day=a&day=b']) {
      const answer = await session.get(path);
      expect(answer.status, path).toBe(400);
      expect(visible(answer.text), path).toMatch(/YYYY-MM-DD \(for example 2026-12-07\)/);
    }
    // A good day filters, and the field shows it back as typed.
    const runs = await get(`/runs?resource=groups&day=${DAY}`);
    expect(tableRows(runs, 'runs')).toHaveLength(3);
    expect(runs).toMatch(new RegExp(`<input name="day"[^>]*value="${DAY}"`));
    const none = await get('/runs?resource=groups&day=2026-11-25');
    expect(none).toContain('<p id="no-runs">No runs match these filters.</p>');
  });

  it('hostile filters on the runs, provisioning, webhooks, people and organisation pages never get a 5xx; a bad day gets 400 with why', async () => {
    const hostile = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom('', ' ', '%', '\u0000', "'; drop table x; --", '2026-13-01', '9999-12-31', '0000-01-01', '2026-02-29', '2024-02-29', '../../etc', 'a'.repeat(300), '<script>', '１２'));
    // Postgres text cannot hold NUL: every page's every text filter carrying one, tried each time.
    const pages = ['/runs', '/provisioning', '/webhooks', '/orgs', '/people', '/people/assignments', '/people/discrepancies'];
    for (const path of pages) {
      for (const key of ['status', 'resource', 'outcome', 'who', 'q', 'by', 'group', 'kind']) {
        const answer = await session.get(`${path}?${key}=a%00b`);
        expect(answer.status, `${path}?${key}=a%00b`).toBeLessThan(500);
      }
    }
    const params = fc.dictionary(fc.constantFrom('day', 'status', 'resource', 'outcome', 'who', 'page', 'q', 'hpage', 'feed', 'by', 'group', 'kind'), fc.array(hostile, { minLength: 1, maxLength: 2 }), { maxKeys: 4 });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...pages), params, async (path, given) => {
        const query = new URLSearchParams();
        for (const [k, values] of Object.entries(given)) for (const v of values) query.append(k, v);
        const answer = await session.get(`${path}?${query.toString()}`);
        expect(answer.status, `${path}?${query.toString()}`).toBeLessThan(500);
        const days = given.day;
        const goodDay = days === undefined || (days.length === 1 && (days[0] === '' || (/^\d{4}-\d{2}-\d{2}$/.test(days[0]!.trim()) && !Number.isNaN(Date.parse(`${days[0]!.trim()}T00:00:00Z`)) && new Date(`${days[0]!.trim()}T00:00:00Z`).toISOString().startsWith(days[0]!.trim()) && Number(days[0]!.slice(0, 4)) >= 1900)));
        if ((path === '/runs' || path === '/provisioning') && !goodDay) {
          expect(answer.status).toBe(400);
          expect(visible(answer.text)).toMatch(/as YYYY-MM-DD/);
        }
      }),
      { numRuns: 120 },
    );
  });
});
