import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { startHealthServer, type HealthServer } from '../src/runtime/health-server.ts';
import { createLogger } from '../src/runtime/log.ts';
import { recordSyncSchedules } from '../src/sync/sync-schedules.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * The series the alerts read, scraped over HTTP from the worker's health server: the state in
 * Postgres (the last complete run, a failure, incomplete runs in a row, the schedule, a held
 * plan, SCIM Users pending and quarantined, the webhook backlog) as its values, each time of
 * the rows themselves; the request budget and the queues' workers; and the SCIM endpoint's
 * requests by status and their duration.
 */

const sink = new Writable({ write: (_c, _e, callback) => callback() });
const at = (iso: string): number => Date.parse(iso) / 1000;

/** The value of one series in a /metrics text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the state gauges', () => {
  let t: TestDatabase;
  let app: App;
  let health: HealthServer;
  let prefix: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    prefix = testPrefix();
    const config = loadConfig({ TRAINSYNC_API_URL: 'http://127.0.0.1:9', TRAINSYNC_API_KEY: 'k', TRAINSYNC_REQUESTS_PER_SECOND: '7', DATABASE_URL: t.url, TRAINSYNC_OWNER_DATABASE_URL: t.ownerUrl, REDIS_URL, TRAINSYNC_QUEUE_PREFIX: prefix });
    app = await createApp(config, createLogger('warn', sink), { jobs: allJobs, migrate: true, redis: 'persistent' });
    await recordSyncSchedules(app.scopes, app.catalog, config);
    const q = (text: string, values: unknown[]): Promise<unknown> => t.pool.query(text, values);
    const run = (resource: string, status: string, finished: string): Promise<unknown> =>
      q(`insert into trainsync.runs (org, resource, status, started_at, finished_at) values ('default', $1, $2, $3::timestamptz - interval '1 minute', $3)`, [resource, status, finished]);
    // courses: complete, then failed (a cancelled run after it is a person's, not an outcome).
    await run('courses', 'succeeded', '2030-01-01T02:10:00Z');
    await run('courses', 'failed', '2030-01-02T02:10:00Z');
    await run('courses', 'cancelled', '2030-01-02T03:00:00Z');
    // results: complete, then incomplete twice.
    await run('results', 'succeeded', '2030-01-01T02:30:00Z');
    await run('results', 'incomplete', '2030-01-02T02:30:00Z');
    await run('results', 'incomplete', '2030-01-03T02:30:00Z');
    await q(
      `insert into trainsync.held_plans (org, source, file, mode, reason, message, actions, people, disables, feed, status, created_at)
       values ('default', 'reconcile', 'reconcile', 'delta', 'max-disable', 'held', '[]', '[]', 3, '{}', 'held', $1), ('default', 'reconcile', 'reconcile', 'delta', 'max-disable', 'held', '[]', '[]', 1, '{}', 'held', $2),
              ('default', 'reconcile', 'reconcile', 'delta', 'max-disable', 'decided', '[]', '[]', 1, '{}', 'approved', $3)`,
      ['2030-01-05T08:00:00Z', '2030-01-05T09:00:00Z', '2030-01-01T00:00:00Z'],
    );
    const user = (n: number, pending: boolean, updated: string, quarantined: string | null): Promise<unknown> =>
      q(
        `insert into trainsync.scim_users (org, scim_id, employee_id, user_name, active, resource, pending, updated_at, quarantined_at, quarantine_reason)
         values ('default', $1, $2, $3, true, '{}', $4, $5, $6, $7)`,
        [randomUUID(), `E${n}`, `u${n}@example.com`, pending, updated, quarantined, quarantined ? 'a value the snapshot refuses' : null],
      );
    await user(1, true, '2030-01-06T10:00:00Z', null);
    await user(2, true, '2030-01-06T10:05:00Z', null);
    await user(3, false, '2030-01-06T09:00:00Z', '2030-01-06T09:30:00Z');
    await user(4, false, '2030-01-06T08:00:00Z', null);
    const event = (id: string, received: string, processed: string | null): Promise<unknown> =>
      q(
        `insert into trainsync.webhook_events (org, event_id, event_type, payload, received_at, processed_at, outcome) values ('default', $1, 'COURSE_COMPLETE', '{}', $2, $3, $4)`,
        [id, received, processed, processed ? 'loaded' : null],
      );
    await event('e1', '2030-01-07T12:00:00Z', null);
    await event('e2', '2030-01-07T12:01:00Z', null);
    await event('e3', '2030-01-07T11:00:00Z', '2030-01-07T11:00:01Z');
    health = await startHealthServer({ port: 0, metrics: app.metrics, log: app.log, checks: {} });
  }, 60_000);

  afterAll(async () => {
    await health?.close();
    await app?.close();
    await t?.drop();
    if (prefix) await dropPrefix(prefix);
  });

  it('reports each organisation and resource as Postgres holds it, at every scrape', async () => {
    const text = await (await fetch(`http://127.0.0.1:${health.port}/metrics`)).text();
    const value = (series: string): number | undefined => sample(text, series);
    expect(value('trainsync_sync_last_complete_timestamp_seconds{org="default",resource="courses"}')).toBe(at('2030-01-01T02:10:00Z'));
    expect(value('trainsync_sync_last_complete_timestamp_seconds{org="default",resource="results"}')).toBe(at('2030-01-01T02:30:00Z'));
    expect(value('trainsync_sync_last_run_failed{org="default",resource="courses"}')).toBe(1);
    expect(value('trainsync_sync_last_run_failed{org="default",resource="results"}')).toBe(0);
    expect(value('trainsync_sync_incomplete_runs_in_a_row{org="default",resource="results"}')).toBe(2);
    expect(value('trainsync_sync_incomplete_runs_in_a_row{org="default",resource="courses"}')).toBe(0);
    // A resource that never ran has its schedule only.
    expect(value('trainsync_sync_last_run_failed{org="default",resource="users"}')).toBeUndefined();
    expect(value('trainsync_sync_schedule_interval_seconds{org="default",resource="users"}')).toBe(86_400);
    expect(value('trainsync_sync_schedule_interval_seconds{org="default",resource="seats"}')).toBe(3_600);
    // Two plans held (the approved one is not), the oldest at 08:00.
    expect(value('trainsync_held_plans{org="default"}')).toBe(2);
    expect(value('trainsync_held_plan_oldest_timestamp_seconds{org="default"}')).toBe(at('2030-01-05T08:00:00Z'));
    expect(value('trainsync_scim_pending_users{org="default"}')).toBe(2);
    expect(value('trainsync_scim_pending_oldest_timestamp_seconds{org="default"}')).toBe(at('2030-01-06T10:00:00Z'));
    expect(value('trainsync_scim_quarantined_users{org="default"}')).toBe(1);
    expect(value('trainsync_scim_quarantined_oldest_timestamp_seconds{org="default"}')).toBe(at('2030-01-06T09:30:00Z'));
    expect(value('trainsync_webhook_backlog_events{org="default"}')).toBe(2);
    expect(value('trainsync_webhook_backlog_oldest_timestamp_seconds{org="default"}')).toBe(at('2030-01-07T12:00:00Z'));
    expect(value('trainsync_request_budget_requests_per_second{org="default"}')).toBe(7);
    // No worker process in this one: each queue reports 0.
    expect(value('trainsync_queue_workers{queue="sync"}')).toBe(0);

    // The next scrape reads again: a plan decided and the backlog worked through are gone from it.
    await t.pool.query("update trainsync.held_plans set status = 'rejected' where status = 'held'");
    await t.pool.query("update trainsync.webhook_events set processed_at = now(), outcome = 'loaded' where processed_at is null");
    const again = await (await fetch(`http://127.0.0.1:${health.port}/metrics`)).text();
    expect(sample(again, 'trainsync_held_plans{org="default"}')).toBeUndefined();
    expect(sample(again, 'trainsync_webhook_backlog_events{org="default"}')).toBeUndefined();
    expect(sample(again, 'trainsync_sync_last_run_failed{org="default",resource="courses"}')).toBe(1);
  });
});

describe('the SCIM request metrics', () => {
  let h: ScimHarness;
  beforeAll(async () => {
    h = await createScimHarness();
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it('count each answer by method and status, refusals included, and time them', async () => {
    const created = await h.request('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'metrics.person@example.com',
      name: { givenName: 'Metrics', familyName: 'Person' },
      emails: [{ value: 'metrics.person@example.com', primary: true }],
      active: true,
    });
    expect(created.status).toBe(201);
    expect((await h.request('GET', '/ServiceProviderConfig')).status).toBe(200);
    expect((await h.request('GET', '/ServiceProviderConfig', undefined, { token: 'wrong' })).status).toBe(401);
    const text = await h.app.metrics.registry.metrics();
    expect(sample(text, 'trainsync_scim_requests_total{org="default",method="POST",status="201"}')).toBe(1);
    expect(sample(text, 'trainsync_scim_requests_total{org="default",method="GET",status="200"}')).toBe(1);
    // Refused at the gate, before the body: still the path's organisation.
    expect(sample(text, 'trainsync_scim_requests_total{org="default",method="GET",status="401"}')).toBe(1);
    expect(sample(text, 'trainsync_scim_request_duration_seconds_count{org="default",method="GET"}')).toBe(2);
    expect(sample(text, 'trainsync_scim_request_duration_seconds_sum{org="default",method="POST"}')).toBeGreaterThan(0);
  });
});
