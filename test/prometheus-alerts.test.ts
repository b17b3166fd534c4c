import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { freePort } from './helpers/own-services.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * One alert end to end, against a real Prometheus: a server of its own (Debian's
 * /usr/bin/prometheus, a temporary config and storage, a free loopback port, 1 s scrapes and
 * evaluations) scrapes real workers with the shipped rules, their `for:` set to 0 (the rules
 * themselves are unit-tested with their durations by test/prometheus-rules.test.ts). A worker
 * with a key the platform refuses fails a courses sync: TrainsyncSyncFailed fires. A worker
 * with the right key takes over (the failure is in Postgres, so it still fires once the first
 * worker is gone); its courses sync succeeds and the alert resolves. Every wait polls
 * Prometheus' HTTP API; nothing is judged by the clock.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROMETHEUS = process.env.PROMETHEUS_PATH ?? '/usr/bin/prometheus';
const WAIT_MS = 60_000;

const alertsSchema = z.object({
  data: z.object({ alerts: z.array(z.object({ labels: z.record(z.string(), z.string()), annotations: z.record(z.string(), z.string()), state: z.string() })) }),
});
const vectorSchema = z.object({ data: z.object({ result: z.array(z.object({ metric: z.record(z.string(), z.string()), value: z.tuple([z.number(), z.string()]) })) }) });

let h: SyncHarness;
let dir: string;
let prometheus: ChildProcess | undefined;
let promUrl: string;
const workers: WorkerProcess[] = [];
let portRefused: number;
let portFixed: number;

/** The shipped rules with every `for:` at 0: the same expressions and annotations, firing at once. */
function rulesWithoutWaiting(): string {
  const rules = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/trainsync.rules.yml'), 'utf8')) as { groups: Array<{ rules: Array<Record<string, unknown>> }> };
  for (const group of rules.groups) for (const rule of group.rules) if ('for' in rule) rule.for = '0s';
  return stringify(rules);
}

async function startPrometheus(): Promise<void> {
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  writeFileSync(path.join(dir, 'rules.yml'), rulesWithoutWaiting());
  writeFileSync(
    path.join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
      rule_files: ['rules.yml'],
      scrape_configs: [{ job_name: 'trainsync', static_configs: [{ targets: [`127.0.0.1:${portRefused}`, `127.0.0.1:${portFixed}`] }] }],
    }),
  );
  const child = spawn(PROMETHEUS, [
    `--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  prometheus = child;
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}): ${log}`);
    return fetch(`${promUrl}/-/ready`).then((r) => (r.ok ? true : undefined), () => undefined);
  }, WAIT_MS, 'Prometheus to be ready');
}

async function firing(alertname: string): Promise<Array<Record<string, string>>> {
  const body = alertsSchema.parse(await (await fetch(`${promUrl}/api/v1/alerts`)).json());
  return body.data.alerts.filter((a) => a.labels.alertname === alertname && a.state === 'firing').map((a) => ({ ...a.labels, summary: a.annotations.summary ?? '' }));
}

async function query(expr: string): Promise<Array<{ metric: Record<string, string>; value: number }>> {
  const body = vectorSchema.parse(await (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)).json());
  return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

/** Resolves once `expr` returns exactly one sample equal to `value`. */
const until = (expr: string, value: number, what: string): Promise<true> =>
  waitFor(async () => {
    const samples = await query(expr);
    return samples.length === 1 && samples[0]!.value === value ? true : undefined;
  }, WAIT_MS, what);

async function syncCourses(): Promise<void> {
  await h.app.queue.add('sync-courses', { trigger: 'cli' }, { org: DEFAULT_ORG, dedupeId: 'sync-courses' });
}

const lastRun = async (): Promise<string | undefined> =>
  (await h.database.pool.query<{ status: string }>("select status from trainsync.runs where resource = 'courses' and status <> 'running' order by id desc limit 1")).rows[0]?.status;

beforeAll(async () => {
  h = await createSyncHarness({ simulator: { sizes: { courses: 20 } } });
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-prometheus-'));
  portRefused = await freePort();
  portFixed = await freePort();
  await startPrometheus();
}, 120_000);

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  if (prometheus?.pid !== undefined && prometheus.exitCode === null && prometheus.signalCode === null) {
    const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the failure alert against a real Prometheus', () => {
  it('fires when a sync fails on a refused key, and resolves once a sync with the fixed key succeeds', async () => {
    const refused = startWorkerProcess({ ...h.env, TRAINSYNC_API_KEY: 'a-key-the-platform-refuses', TRAINSYNC_METRICS_PORT: String(portRefused) }, ['--no-schedules']);
    workers.push(refused);
    await refused.ready;
    await syncCourses();
    await waitFor(async () => ((await lastRun()) === 'failed' ? true : undefined), WAIT_MS, 'the courses run to fail');

    const alerts = await waitFor(async () => {
      const found = await firing('TrainsyncSyncFailed');
      return found.length > 0 ? found : undefined;
    }, WAIT_MS, 'TrainsyncSyncFailed to fire');
    expect(alerts).toEqual([{ alertname: 'TrainsyncSyncFailed', org: DEFAULT_ORG, resource: 'courses', severity: 'warning', summary: `trainsync: the courses sync of ${DEFAULT_ORG} failed` }]);

    // The key fixed: a worker with the right one, then the first one stopped. The failure is
    // Postgres' state, so the new worker reports it too and the alert keeps firing.
    const fixed = startWorkerProcess({ ...h.env, TRAINSYNC_METRICS_PORT: String(portFixed) }, ['--no-schedules']);
    workers.push(fixed);
    await fixed.ready;
    await until(`trainsync_sync_last_run_failed{instance="127.0.0.1:${portFixed}",resource="courses"}`, 1, 'the new worker to report the failure');
    refused.child.kill('SIGTERM');
    expect(await refused.exited).toBe(0);
    await until(`up{instance="127.0.0.1:${portRefused}"}`, 0, 'Prometheus to find the first worker gone');
    await until(`count(ALERTS{alertname="TrainsyncSyncFailed",alertstate="firing"} and on() up{instance="127.0.0.1:${portRefused}"} == 0)`, 1, 'the alert still firing without the first worker');

    await syncCourses();
    await waitFor(async () => ((await lastRun()) === 'succeeded' ? true : undefined), WAIT_MS, 'the courses run to succeed');
    await until(`trainsync_sync_last_run_failed{instance="127.0.0.1:${portFixed}",resource="courses"}`, 0, 'the new worker to report the success');
    await waitFor(async () => ((await firing('TrainsyncSyncFailed')).length === 0 ? true : undefined), WAIT_MS, 'TrainsyncSyncFailed to resolve');
    // Resolved by the value, not by a series gone missing: the worker is up and reports 0.
    expect(await query(`up{instance="127.0.0.1:${portFixed}"}`)).toEqual([expect.objectContaining({ value: 1 })]);
    expect(await query('trainsync_sync_last_complete_timestamp_seconds{resource="courses"}')).toHaveLength(1);

    fixed.child.kill('SIGTERM');
    expect(await fixed.exited).toBe(0);
  }, 180_000);
});
