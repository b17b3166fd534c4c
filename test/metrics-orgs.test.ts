import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { startHealthServer } from '../src/runtime/health-server.ts';
import { createLogger } from '../src/runtime/log.ts';
import { observeJobs, OTHER_ORGS } from '../src/runtime/metrics.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * /metrics with 1,000 organisations registered, over HTTP from the worker's health server:
 * every organisation makes requests, runs jobs (one succeeds, one fails), loads rows and
 * receives a webhook. With the default TRAINSYNC_METRICS_ORG_LABELS (50) the request, job,
 * row and webhook series carry at most 50 slugs plus `_other`, the last-success and failure
 * series one per organisation; `none` sums them all; `all` is the unbounded count, measured
 * beside them. The series count stays under the documented bound.
 */

const N = 1_000;
const slug = (i: number): string => `m${String(i).padStart(4, '0')}`;
const sink = new Writable({ write: (_c, _e, callback) => callback() });

let database: TestDatabase;
let prefix: string;
let dir: string;
let file: string;

beforeAll(async () => {
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-metrics-orgs-'));
  file = path.join(dir, 'orgs.json');
  writeFileSync(file, JSON.stringify({ organisations: Array.from({ length: N }, (_, i) => ({ slug: slug(i + 1), name: `Org ${i + 1}`, apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'ORG_KEY' } })) }));
}, 60_000);

afterAll(async () => {
  await database?.drop();
  if (prefix) await dropPrefix(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const envFor = (labels?: string): Record<string, string> => ({
  TRAINSYNC_ORGS_FILE: file,
  ORG_KEY: 'key-not-used-here',
  DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
  REDIS_URL,
  TRAINSYNC_QUEUE_PREFIX: prefix,
  LOG_LEVEL: 'warn',
  ...(labels === undefined ? {} : { TRAINSYNC_METRICS_ORG_LABELS: labels }),
});

/** The series of trainsync's own metrics (the process's default metrics left out) after every organisation worked, as scraped over HTTP. */
async function scrape(labels?: string): Promise<string[]> {
  const config = loadConfig(envFor(labels));
  const app: App = await createApp(config, createLogger('warn', sink), { jobs: allJobs, migrate: true });
  const health = await startHealthServer({ port: 0, metrics: app.metrics, log: app.log, checks: {} });
  try {
    const finished = observeJobs(app.metrics, app.catalog);
    for (let i = 1; i <= N; i++) {
      const org = slug(i);
      app.metrics.observeRequest({ method: 'GET', path: '/api/v2/users', status: 200, ms: 40, attempt: 1 }, org);
      finished('sync-users', 'completed', 1.5, { inserted: 3, updated: 1, requests: 2 }, org);
      finished('sync-results', 'failed', 0.5, undefined, org);
      app.metrics.webhookReceived.inc({ org, type: 'COURSE_COMPLETED', outcome: 'stored' });
    }
    const body = await (await fetch(`http://127.0.0.1:${health.port}/metrics`)).text();
    // Only series that carry an organisation: the others (queue counts read at scrape time and
    // left out when Redis answers late on a busy machine, gauges set as the app starts) do not
    // grow with the organisations, and their number varies from one scrape to the next.
    return body.split('\n').filter((line) => line.startsWith('trainsync_') && line.includes('org="'));
  } finally {
    await health.close();
    await app.close();
  }
}

const orgsOf = (series: string[], metric: string): Set<string> => new Set(series.filter((s) => s.startsWith(metric)).map((s) => /org="([^"]*)"/.exec(s)?.[1] ?? ''));

describe('/metrics with 1,000 organisations', () => {
  it('keeps 50 slugs plus _other on the heavy series by default, one last-success and one failure series per organisation', async () => {
    const capped = await scrape();
    const none = await scrape('none');
    const all = await scrape('all');
    // Series an organisation adds to every heavy metric, from the unbounded count.
    const perOrg = (all.length - none.length) / (N - 1);
    expect(perOrg).toBeGreaterThan(20);

    for (const metric of ['trainsync_api_request_duration_seconds', 'trainsync_job_duration_seconds', 'trainsync_rows_loaded_total', 'trainsync_webhook_events_received_total']) {
      const labelled = orgsOf(capped, metric);
      expect(labelled.size, metric).toBe(51);
      expect([...labelled].filter((o) => o !== OTHER_ORGS)).toEqual(Array.from({ length: 50 }, (_, i) => slug(i + 1)));
      expect(orgsOf(none, metric), metric).toEqual(new Set([OTHER_ORGS]));
    }
    expect(orgsOf(capped, 'trainsync_org_last_success_timestamp_seconds').size).toBe(N);
    expect(orgsOf(capped, 'trainsync_org_job_failures_total').size).toBe(N);
    expect(capped.find((s) => s.startsWith(`trainsync_org_job_failures_total{org="${slug(777)}"}`))).toMatch(/ 1$/);
    // The sums are kept: every organisation's request is counted once.
    const requests = capped.filter((s) => s.startsWith('trainsync_api_requests_total')).reduce((sum, s) => sum + Number(s.split(' ').at(-1)), 0);
    expect(requests).toBe(N);

    // The bound: what does not depend on the organisations, 51 organisations' heavy series, 2 per organisation.
    const fixed = none.length - perOrg - 2 * N;
    expect(capped.length).toBeLessThanOrEqual(fixed + 51 * perOrg + 2 * N);
    expect(capped.length * 5).toBeLessThan(all.length);
    process.stdout.write(`metrics series at ${N} organisations: default ${capped.length}, none ${none.length}, all ${all.length} (${perOrg} per organisation)\n`);
  }, 180_000);

  it('TRAINSYNC_METRICS_ORG_LABELS takes all, none or 0 to 1000, and names itself otherwise', () => {
    const base = { TRAINSYNC_API_URL: 'http://127.0.0.1:9', TRAINSYNC_API_KEY: 'k' };
    expect(loadConfig(base).TRAINSYNC_METRICS_ORG_LABELS).toBe(50);
    expect(loadConfig({ ...base, TRAINSYNC_METRICS_ORG_LABELS: 'none' }).TRAINSYNC_METRICS_ORG_LABELS).toBe(0);
    expect(loadConfig({ ...base, TRAINSYNC_METRICS_ORG_LABELS: 'ALL' }).TRAINSYNC_METRICS_ORG_LABELS).toBe(Number.POSITIVE_INFINITY);
    expect(loadConfig({ ...base, TRAINSYNC_METRICS_ORG_LABELS: '200' }).TRAINSYNC_METRICS_ORG_LABELS).toBe(200);
    for (const bad of ['1001', '-1', 'many', '2.5']) {
      expect(() => loadConfig({ ...base, TRAINSYNC_METRICS_ORG_LABELS: bad })).toThrow(ConfigError);
      try {
        loadConfig({ ...base, TRAINSYNC_METRICS_ORG_LABELS: bad });
      } catch (error) {
        expect((error as ConfigError).problems.join('\n')).toMatch(/^TRAINSYNC_METRICS_ORG_LABELS: got "[^"]*"; expected all, none, or how many organisations/m);
      }
    }
  });
});
