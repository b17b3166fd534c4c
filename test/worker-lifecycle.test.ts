import { QueueEvents } from 'bullmq';
import { freePort } from './helpers/own-services.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobOptions } from '../src/queue/job-options.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

describe('the worker process', () => {
  let h: SyncHarness;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 1_500, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 20 } },
      env: { TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_RESULTS_WINDOW_DAYS: '7', TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '10000' },
    });
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h?.close();
  });

  it('serves /healthz and /metrics, and on SIGTERM puts a running sync back to resume from its checkpoint', async () => {
    const port = await freePort();
    const first = startWorkerProcess({ ...h.env, TRAINSYNC_METRICS_PORT: String(port) }, ['--no-schedules']);
    workers.push(first);
    await first.ready;

    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', postgres: 'up', redis: 'up' });

    const job = await h.app.queue.queues[SYNC_QUEUE].add(
      'sync-results',
      { trigger: 'cli', since: '2024-01-01', until: '2024-12-31', full: false },
      { ...defaultJobOptions(h.config), deduplication: { id: 'sync-results' } },
    );
    const prefix = `results:job:${job.id}:window:`;
    const windowsDone = async (): Promise<number> =>
      (await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.checkpoints where key like $1', [`${prefix}%`])).rows[0]!.n;
    await waitFor(async () => ((await windowsDone()) >= 5 ? true : undefined), 60_000, 'five finished windows');

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/trainsync_api_requests_total\{org="default",method="GET",status="200"\} \d+/);
    expect(metrics).toMatch(/trainsync_queue_jobs\{queue="sync",state="active"\} 1/);

    first.child.kill('SIGTERM');
    // It exits on its own, cleanly (how long that takes is measured by `npm run bench -- timings`).
    expect(await first.exited).toBe(0);
    expect(first.output()).not.toMatch(/forcing close/);
    expect(first.output()).toMatch(/goes back to the queue/);
    // Back in the queue, not failed, with its finished windows kept.
    expect(['delayed', 'waiting', 'wait']).toContain(await job.getState());
    const kept = await windowsDone();
    expect(kept).toBeGreaterThanOrEqual(5);

    const events = new QueueEvents(SYNC_QUEUE, { connection: { url: h.config.REDIS_URL }, prefix: h.config.TRAINSYNC_QUEUE_PREFIX });
    await events.waitUntilReady();
    const second = startWorkerProcess({ ...h.env, TRAINSYNC_METRICS_PORT: '0' }, ['--no-schedules']);
    workers.push(second);
    try {
      const summary = (await job.waitUntilFinished(events, 90_000)) as Record<string, unknown>;
      expect(summary).toMatchObject({ mode: 'backfill', windowsResumed: kept });
    } finally {
      await events.close();
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    const failed = await h.database.pool.query("select count(*)::int as n from trainsync.runs where status = 'failed'");
    expect(failed.rows[0]?.n).toBe(0);
  });
});
