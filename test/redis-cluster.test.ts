/**
 * trainsync on a Redis Cluster of this file's own (three masters, one replica each, on
 * loopback): REDIS_URL=redis+cluster://…, the queue prefix put in a hash tag on its own,
 * a sync and a provisioning run through it, a CLUSTER FAILOVER of the master holding
 * our slot in the middle of a sync (nothing lost), and the request budget's two keys
 * in one slot, still holding the budget. Runs serially (package.json test:timing): the
 * budget check counts requests per second.
 */
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { budgetKeys, createRequestBudget } from '../src/platform/request-budget.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { createRedisClient, masters } from '../src/lib/redis-client.ts';
import { findUser, NO_FAULTS, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { grantsByBudget, grantsIn, maxGrantsInAnySecond } from './helpers/budget-grants.ts';
import { feedDir, rowsFromState, toCsv } from './helpers/hr-feed.ts';
import { capturingLogger } from './helpers/log-capture.ts';
import { runRateClients } from './helpers/rate-clients.ts';
import { command, startOwnCluster, type OwnCluster } from './helpers/redis-ha.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorCourses, simulatorResults, simulatorUsers, warehouseCourses, warehouseResults, warehouseUsers } from './helpers/warehouse-compare.ts';
import { startWorkerProcess, waitFor } from './helpers/worker-process.ts';
import { runCli } from './helpers/cli.ts';

let cluster: OwnCluster;
let h: SyncHarness;
let files: ReturnType<typeof feedDir>;

beforeAll(async () => {
  cluster = await startOwnCluster();
  h = await createSyncHarness({
    simulator: { seed: 31, sizes: { users: 40, groups: 3, courses: 6, results: 1_500, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' } },
    env: { REDIS_URL: cluster.url, TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '3000' },
  });
  files = feedDir();
}, 60_000);

afterAll(async () => {
  await h?.close();
  files?.cleanup();
  await cluster?.destroy();
}, 30_000);

/** Every key on every master of the cluster (SCAN per master: each holds only its own slots). */
async function allKeys(): Promise<string[]> {
  const client = createRedisClient(cluster.url, { redis: { maxRetriesPerRequest: 3 } });
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve());
      client.once('error', reject);
    });
    const keys: string[] = [];
    for (const node of masters(client)) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'COUNT', 1000);
        cursor = next;
        keys.push(...found);
      } while (cursor !== '0');
    }
    return keys;
  } finally {
    client.disconnect();
  }
}

describe('on a Redis Cluster', () => {
  it('puts the queue prefix in a hash tag, and syncs and provisions through the cluster', async () => {
    const prefix = h.config.TRAINSYNC_QUEUE_PREFIX;
    expect(prefix).toBe(`{${h.prefix}}`);
    // A prefix that already holds a tag is kept; a single server keeps the prefix as given (byte for byte).
    expect(loadConfig({ REDIS_URL: cluster.url, TRAINSYNC_QUEUE_PREFIX: 'acme:{jobs}' }).TRAINSYNC_QUEUE_PREFIX).toBe('acme:{jobs}');
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', TRAINSYNC_QUEUE_PREFIX: h.prefix }).TRAINSYNC_QUEUE_PREFIX).toBe(h.prefix);

    const outcomes = await h.sync(['courses', 'filters', 'users', 'results'], { full: true });
    for (const resource of ['courses', 'filters', 'users', 'results']) summaryOf(outcomes, resource);
    expect(await warehouseCourses(h.database.pool)).toEqual(simulatorCourses(h.sim.state));
    expect(await warehouseUsers(h.database.pool)).toEqual(simulatorUsers(h.sim.state));
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));

    // A provisioning run: a joiner gets an account, a leaver loses access.
    const rows = rowsFromState(h.sim.state);
    const leaver = rows.find((r) => r.status === 'active')!;
    leaver.status = 'terminated';
    const joiner = { employee_id: 'CL001', email: `cl001.joiner${ORG_EMAIL_DOMAIN}`, first_name: 'Clu', last_name: 'Ster', status: 'active', groups: [h.sim.state.groups[0]!.id], role: 'USER', organisation_identifier: 'CL001' };
    const file = files.write('hr.csv', toCsv([...rows, joiner]));
    const result = await provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'full', dryRun: false, force: false });
    expect(result.plan.counts).toMatchObject({ 'create-user': 1, disable: 1 });
    expect([...new Set(result.applied?.audit.map((r) => r.status))]).toEqual(['succeeded']);
    expect(findUser(h.sim.state, joiner.email)?.hasAccess).toBe(true);
    expect(findUser(h.sim.state, leaver.email)?.hasAccess).toBe(false);
    const { rows: identities } = await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.identities where employee_id = $1', ['CL001']);
    expect(identities[0]?.n).toBe(1);

    // Every key we and BullMQ wrote is under the tag: all in the one slot the tag names.
    const keys = (await allKeys()).filter((key) => key.includes(h.prefix));
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((key) => !key.startsWith(`${prefix}:`))).toEqual([]);
    const slot = Number(await command(cluster.ports[0]!, ['CLUSTER', 'KEYSLOT', prefix]));
    const slots = new Set(await Promise.all(keys.slice(0, 50).map(async (key) => Number(await command(cluster.ports[0]!, ['CLUSTER', 'KEYSLOT', key])))));
    expect([...slots]).toEqual([slot]);
  });

  it('a worker process and a CLI command share the queues over the cluster', async () => {
    const worker = startWorkerProcess({ ...h.env, LOG_FORMAT: 'json' });
    try {
      await Promise.race([worker.ready, worker.exited.then((code) => Promise.reject(new Error(`worker exited (${code}):\n${worker.output()}`)))]);
      // The CLI finds the worker (CLIENT LIST on every node) and leaves the job to it.
      const run = await runCli(['sync', 'courses'], h.env);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/a worker is connected/);
      const done = (await h.app.queue.queues[SYNC_QUEUE].getCompleted()).filter((job) => job.name === 'sync-courses');
      expect(done.map((job) => job.processedBy)).toContain(`${os.hostname()}:${worker.child.pid}`);
    } finally {
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    }
    expect(worker.output()).not.toMatch(/"worker error"|"queue error"|Redis unreachable|CROSSSLOT/);
  });

  it('loses no job and no row when the master of our slot fails over (CLUSTER FAILOVER) during a sync', async () => {
    // A simulator and a warehouse of its own (the harness's), so every row must come from this sync.
    const run = await createSyncHarness({
      simulator: { seed: 32, sizes: { users: 30, courses: 5, results: 3_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 40 } },
      env: { REDIS_URL: cluster.url, TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '3000' },
    });
    try {
      const prefix = run.config.TRAINSYNC_QUEUE_PREFIX;
      const before = await cluster.ownersOf(prefix);
      const syncing = run.sync(['courses', 'users', 'results'], { full: true });
      let settled = false;
      syncing.then(
        () => (settled = true),
        () => (settled = true),
      );
      const queue = run.app.queue.queues[SYNC_QUEUE];
      await waitFor(async () => ((await queue.getActive()).some((job) => job.name === 'sync-results' && typeof job.progress === 'object') ? true : undefined), 30_000, 'the results sync to run');

      // Slower pages while the failover runs: the sync is certainly still going when it ends.
      run.sim.setFaults({ ...NO_FAULTS, latencyMs: 400 });
      const moved = await cluster.failover(prefix);
      expect(moved).toEqual({ from: before.master, to: before.replica });
      expect((await cluster.ownersOf(prefix)).master).toBe(before.replica);
      expect(settled).toBe(false);
      run.sim.setFaults({ ...NO_FAULTS });

      const outcomes = await syncing;
      for (const resource of ['courses', 'users', 'results']) summaryOf(outcomes, resource);
      expect(await warehouseResults(run.database.pool)).toEqual(simulatorResults(run.sim.state));
      expect(await warehouseUsers(run.database.pool)).toEqual(simulatorUsers(run.sim.state));
      const { rows } = await run.database.pool.query<{ resource: string; status: string }>('select resource, status from trainsync.runs order by resource');
      expect(rows.every((r) => r.status === 'succeeded'), JSON.stringify(rows)).toBe(true);
      // The jobs are all in Redis, completed, on the new master.
      expect(await queue.getJobCounts('completed', 'failed', 'active', 'waiting')).toMatchObject({ failed: 0, active: 0, waiting: 0 });
      // A failover is one line, not an outage, nor an error from each Worker and QueueEvents.
      const logged = run.logLines.join('');
      expect(logged).not.toMatch(/Redis unreachable|"worker error"|"queue error"|"queue events error"/);
      expect(logged.match(/Redis is failing over/g)?.length ?? 0).toBeLessThanOrEqual(1);
    } finally {
      await run.close();
    }
  });

  it("keeps a budget's two keys in one slot, and the budget holds across processes", async () => {
    const { log } = capturingLogger('warn');
    const budget = createRequestBudget({ redisUrl: cluster.url, keyPrefix: 'bare-prefix', origin: 'https://platform.example', requestsPerSecond: 20, log });
    try {
      // A caller's own prefix is tagged too; the keys are those budgetKeys names.
      expect({ log: budget.limiterId, pause: budget.pauseKey }).toEqual(budgetKeys('{bare-prefix}', 'https://platform.example'));
      const [logSlot, pauseSlot] = await Promise.all([budget.limiterId, budget.pauseKey].map(async (key) => Number(await command(cluster.ports[0]!, ['CLUSTER', 'KEYSLOT', key]))));
      expect(logSlot).toBe(pauseSlot);
      // The script runs (no CROSSSLOT), and a pause is seen.
      await budget.acquire();
      await budget.pauseFor(50);
      expect(await budget.pausedForMs()).toBeGreaterThanOrEqual(0);
    } finally {
      await budget.close();
    }

    // Two processes on one budget through the cluster: one grant log, one grant per request, no
    // sliding second of Redis's clock holding more (counted as the budget decides: helpers/budget-grants.ts).
    h.sim.setFaults({ ...NO_FAULTS });
    h.sim.resetRequests();
    const rps = 20;
    const results = await runRateClients(2, { apiUrl: h.sim.url, apiKey: h.sim.apiKey, redisUrl: cluster.url, keyPrefix: h.config.TRAINSYNC_QUEUE_PREFIX, requestsPerSecond: rps, count: 30, concurrency: 3 });
    for (const r of results) expect({ code: r.code, done: r.done }, r.output).toEqual({ code: 0, done: 30 });
    expect(h.sim.requests).toHaveLength(60);
    const grants = grantsIn(results.flatMap((r) => r.grantLines));
    expect(grantsByBudget(grants).size).toBe(1);
    expect(grants).toHaveLength(60);
    expect(maxGrantsInAnySecond(grants)).toBeLessThanOrEqual(rps);
  });
});
