import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createLogger } from '../src/runtime/log.ts';
import { createPlatformClient } from '../src/platform/client.ts';
import { defaultJobOptions } from '../src/queue/job-options.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { maxInWindow, startSimulator, type RequestRecord } from '../src/simulator/index.ts';
import { runCli, startCli } from '../test/helpers/cli.ts';
import { createTestDatabase } from '../test/helpers/db.ts';
import { freePort, startOwnRedis } from '../test/helpers/own-services.ts';
import { runRateClients } from '../test/helpers/rate-clients.ts';
import { OUTAGE_SIMULATOR, outageEnv } from '../test/helpers/redis-outage.ts';
import { dropPrefix, REDIS_URL, testPrefix } from '../test/helpers/redis.ts';
import { createSyncHarness } from '../test/helpers/sync-harness.ts';
import { startWorkerProcess, waitFor } from '../test/helpers/worker-process.ts';

/**
 * The durations the tests used to assert (issue 15: tests assert behaviour, timing goals
 * live here), measured on the same real parts, each printed with its target:
 *
 * - Redis stopped under a running worker (test/fault-redis.test.ts): how soon /healthz
 *   and /metrics answer, how long `status` takes to give up, how long after the stop a
 *   waiting `sync` with TRAINSYNC_REDIS_TIMEOUT_MS=4000 ends.
 * - The shared request budget (test/platform-budget.test.ts): two processes' span against
 *   the ideal at 20/s and at 200/s (batched grants must not lapse unused), and requests
 *   landing during a Retry-After pause.
 * - SIGTERM to exit of a worker in the middle of a results sync (test/worker-lifecycle.test.ts).
 *
 * Run: node bin/run-ts.js bench/test-timings.ts (or `npm run bench -- timings`). Prints a
 * line per figure, then one JSON line.
 */

const now = (): number => performance.timeOrigin + performance.now();
const silent = createLogger('silent');

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = now();
  const value = await fn();
  return { value, ms: Math.round(now() - started) };
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

export interface RedisOutageFigures {
  healthzMs: number;
  metricsMs: number;
  statusExitMs: number;
  waitingSyncExitAfterStopMs: number;
}

async function redisOutage(): Promise<RedisOutageFigures> {
  const [redis, database, sim, metricsPort] = await Promise.all([
    startOwnRedis(),
    createTestDatabase(),
    startSimulator(OUTAGE_SIMULATOR),
    freePort(),
  ]);
  const prefix = `bench-timings-${process.pid}`;
  const env = outageEnv({ apiUrl: sim.url, apiKey: sim.apiKey, databaseUrl: database.url, redisUrl: redis.url, prefix });
  const probe = new Redis(redis.url, { maxRetriesPerRequest: null, retryStrategy: () => 200 });
  probe.on('error', () => undefined);
  const queue = new Queue(SYNC_QUEUE, { connection: probe, prefix });
  queue.on('error', () => undefined);
  const worker = startWorkerProcess({ ...env, TRAINSYNC_METRICS_PORT: String(metricsPort) });
  try {
    await worker.ready;
    const waiting = startCli(['sync', 'results', '--since', '2024-01-01', '--until', '2024-12-31'], { ...env, TRAINSYNC_REDIS_TIMEOUT_MS: '4000' });
    await waitFor(async () => ((await queue.getActive()).some((job) => job.progress && typeof job.progress === 'object') ? true : undefined), 30_000, 'the results job to run');
    await waitFor(async () => (/a worker is connected/.test(waiting.output()) ? true : undefined), 30_000, 'the sync to wait');

    await redis.stop();
    const stoppedAt = now();
    // The first answer that reports the outage, and how long that answer took.
    let healthzMs = Number.NaN;
    await waitFor(async () => {
      const { value, ms } = await timed(() => fetch(`http://127.0.0.1:${metricsPort}/healthz`, { signal: AbortSignal.timeout(30_000) }));
      await value.arrayBuffer();
      healthzMs = ms;
      return value.status === 503 ? true : undefined;
    }, 30_000, '/healthz to report the outage');
    const metrics = await timed(async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(30_000) })).text());
    const status = await timed(() => runCli(['status'], { ...env, TRAINSYNC_REDIS_TIMEOUT_MS: '3000' }));
    await waiting.done;
    const waitingSyncExitAfterStopMs = Math.round(now() - stoppedAt);
    return { healthzMs, metricsMs: metrics.ms, statusExitMs: status.ms, waitingSyncExitAfterStopMs };
  } finally {
    worker.child.kill('SIGKILL');
    await worker.exited;
    await queue.close().catch(() => undefined);
    probe.disconnect();
    await redis.destroy();
    await sim.close();
    await database.drop();
  }
}

export interface BudgetFigures {
  /** Ideal span: all requests at exactly the budget. */
  at20: { spanMs: number; idealMs: number; maxInAnySecond: number };
  at200: { spanMs: number; idealMs: number; maxInAnySecond: number };
  /** Requests that reached the platform from 60 ms to 1 s after a 429 with Retry-After: 1. */
  duringPause: number;
}

async function budget(): Promise<BudgetFigures> {
  const sim = await startSimulator({ seed: 2, sizes: { results: 0, users: 20 } });
  const prefixes: string[] = [];
  const spanOf = (requests: readonly RequestRecord[]): number => Math.round(requests.at(-1)!.at - requests[0]!.at);
  const two = async (rps: number, perProcess: number, concurrency: number): Promise<BudgetFigures['at20']> => {
    sim.resetRequests();
    const keyPrefix = testPrefix();
    prefixes.push(keyPrefix);
    await runRateClients(2, { apiUrl: sim.url, apiKey: sim.apiKey, redisUrl: REDIS_URL, keyPrefix, requestsPerSecond: rps, count: perProcess, concurrency });
    const requests = sim.requests;
    return { spanMs: spanOf(requests), idealMs: Math.round(((2 * perProcess) / rps) * 1000), maxInAnySecond: maxInWindow(requests, 1000) };
  };
  try {
    const at20 = await two(20, 40, 4);
    const at200 = await two(200, 250, 8);

    sim.resetRequests();
    const keyPrefix = testPrefix();
    prefixes.push(keyPrefix);
    const make = (): ReturnType<typeof createPlatformClient> =>
      createPlatformClient({ apiUrl: sim.url, apiKey: sim.apiKey, log: silent, redisUrl: REDIS_URL, keyPrefix, requestsPerSecond: 20, retryBaseDelayMs: 5 });
    const clients = [make(), make()];
    sim.setFaults({ rateLimitEvery: 12, retryAfter: '1' });
    try {
      await Promise.all(clients.map(async (client) => {
        for (let i = 0; i < 10; i++) await client.getSeats();
      }));
    } finally {
      sim.setFaults({ rateLimitEvery: 0 });
      await Promise.all(clients.map((c) => c.close()));
    }
    const requests = sim.requests;
    const duringPause = requests
      .filter((r) => r.status === 429)
      .reduce((n, hit) => n + requests.filter((r) => r.at >= hit.at + 60 && r.at < hit.at + 1000).length, 0);
    return { at20, at200, duringPause };
  } finally {
    await sim.close();
    for (const prefix of prefixes) await dropPrefix(prefix);
  }
}

export interface ShutdownFigures {
  sigtermToExitMs: number;
  exitCode: number | string;
}

async function shutdown(): Promise<ShutdownFigures> {
  const h = await createSyncHarness({
    simulator: { sizes: { results: 1_500, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 20 } },
    env: { TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_RESULTS_WINDOW_DAYS: '7', TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '10000' },
  });
  const worker = startWorkerProcess({ ...h.env, TRAINSYNC_METRICS_PORT: '0' }, ['--no-schedules']);
  try {
    await worker.ready;
    const job = await h.app.queue.queues[SYNC_QUEUE].add('sync-results', { trigger: 'cli', since: '2024-01-01', until: '2024-12-31', full: false }, defaultJobOptions(h.config));
    const windowsDone = async (): Promise<number> =>
      (await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.checkpoints where key like $1', [`results:job:${job.id}:window:%`])).rows[0]!.n;
    await waitFor(async () => ((await windowsDone()) >= 5 ? true : undefined), 60_000, 'five finished windows');
    const { value: exitCode, ms } = await timed(async () => {
      worker.child.kill('SIGTERM');
      return worker.exited;
    });
    return { sigtermToExitMs: ms, exitCode };
  } finally {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await h.close();
  }
}

say('Redis stopped under a running worker …');
const outage = await redisOutage();
say(`  /healthz answered 503 in ${outage.healthzMs} ms (target < 1000)`);
say(`  /metrics answered in ${outage.metricsMs} ms (target < 2000)`);
say(`  status (TRAINSYNC_REDIS_TIMEOUT_MS=3000) exited after ${outage.statusExitMs} ms (target < 10000)`);
say(`  a waiting sync (TRAINSYNC_REDIS_TIMEOUT_MS=4000) exited ${outage.waitingSyncExitAfterStopMs} ms after Redis stopped (target < 15000)`);

say('Two processes on one request budget …');
const shared = await budget();
say(`  20/s: 80 requests over ${shared.at20.spanMs} ms, ideal ${shared.at20.idealMs} ms; max ${shared.at20.maxInAnySecond} in any second (budget 20)`);
say(`  200/s: 500 requests over ${shared.at200.spanMs} ms, ideal ${shared.at200.idealMs} ms (target < 1.5 × ideal); max ${shared.at200.maxInAnySecond} in any second (budget 200)`);
say(`  requests landing 60 ms to 1 s after a 429 (Retry-After: 1): ${shared.duringPause} (target 0)`);

say('SIGTERM to a worker in the middle of a results sync …');
const stop = await shutdown();
say(`  exited ${stop.exitCode} after ${stop.sigtermToExitMs} ms (target < 10000, the shutdown timeout)`);

process.stdout.write(`${JSON.stringify({ redisOutage: outage, budget: shared, shutdown: stop })}\n`);
