/**
 * trainsync behind Redis Sentinel, all of this file's own on loopback: a master, its
 * replica and one sentinel. REDIS_URL=redis+sentinel://…/mymaster; a sync through it,
 * then SENTINEL FAILOVER in the middle of a sync: the job finishes on the new master and
 * the warehouse equals the simulator. Runs serially (package.json test:timing), as the
 * other failure-injection files do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { maskUrl } from '../src/lib/infra-errors.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { provisionFeed } from '../src/provisioning/provision-feed.ts';
import { findUser, NO_FAULTS, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { feedDir, rowsFromState, toCsv } from './helpers/hr-feed.ts';
import { startOwnSentinel, type OwnSentinel } from './helpers/redis-ha.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorCourses, simulatorResults, simulatorUsers, warehouseCourses, warehouseResults, warehouseUsers } from './helpers/warehouse-compare.ts';
import { waitFor } from './helpers/worker-process.ts';

let sentinel: OwnSentinel;
let h: SyncHarness;

beforeAll(async () => {
  sentinel = await startOwnSentinel();
  h = await createSyncHarness({
    simulator: { seed: 41, sizes: { users: 30, courses: 5, results: 3_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' } },
    env: { REDIS_URL: sentinel.url, TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '3000' },
  });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await sentinel?.destroy();
}, 30_000);

describe('behind Redis Sentinel', () => {
  it('keeps the prefix as given, and syncs through the master the sentinel names', async () => {
    // Sentinel serves one master: no hash tag needed, the keys are a single server's.
    expect(h.config.TRAINSYNC_QUEUE_PREFIX).toBe(h.prefix);
    const outcomes = await h.sync(['courses', 'users'], { full: true });
    for (const resource of ['courses', 'users']) summaryOf(outcomes, resource);
    expect(await warehouseCourses(h.database.pool)).toEqual(simulatorCourses(h.sim.state));
    expect(await warehouseUsers(h.database.pool)).toEqual(simulatorUsers(h.sim.state));
    expect(await h.app.queue.queues[SYNC_QUEUE].getJobCounts('completed')).toMatchObject({ completed: 2 });
    expect(await sentinel.currentMaster()).toBe(sentinel.masterPort);
  });

  it('loses no job and no row when SENTINEL FAILOVER happens during a sync', async () => {
    h.sim.setFaults({ ...NO_FAULTS, latencyMs: 40 });
    const syncing = h.sync(['results'], { full: true });
    let settled = false;
    syncing.then(
      () => (settled = true),
      () => (settled = true),
    );
    const queue = h.app.queue.queues[SYNC_QUEUE];
    await waitFor(async () => ((await queue.getActive()).some((job) => job.name === 'sync-results' && typeof job.progress === 'object') ? true : undefined), 30_000, 'the results sync to run');

    // Slower pages while the failover runs: the sync is certainly still going when it ends.
    h.sim.setFaults({ ...NO_FAULTS, latencyMs: 400 });
    const moved = await sentinel.failover();
    expect(moved).toEqual({ from: sentinel.masterPort, to: sentinel.replicaPort });
    expect(settled).toBe(false);
    h.sim.setFaults({ ...NO_FAULTS });

    const outcomes = await syncing;
    summaryOf(outcomes, 'results');
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
    const { rows } = await h.database.pool.query<{ resource: string; status: string }>('select resource, status from trainsync.runs order by started_at');
    expect(rows.every((r) => r.status === 'succeeded'), JSON.stringify(rows)).toBe(true);
    // Every job is still known, and completed, now on the new master.
    expect(await queue.getJobCounts('completed', 'failed', 'active', 'waiting')).toMatchObject({ completed: 3, failed: 0, active: 0, waiting: 0 });
    // A failover is at most one line, not an outage, nor an error from each Worker and QueueEvents.
    const logged = h.logLines.join('');
    expect(logged).not.toMatch(/"worker error"|"queue error"|"queue events error"/);
    expect(logged.match(/Redis is failing over/g)?.length ?? 0).toBeLessThanOrEqual(1);

    // And on the new master: a new sync, and a provisioning run (a joiner gets an account).
    summaryOf(await h.sync(['courses']), 'courses');
    const joiner = { employee_id: 'SN001', email: `sn001.joiner${ORG_EMAIL_DOMAIN}`, first_name: 'Senti', last_name: 'Nel', status: 'active', groups: [], role: 'USER', organisation_identifier: 'SN001' };
    const files = feedDir();
    try {
      const file = files.write('hr.csv', toCsv([...rowsFromState(h.sim.state), joiner]));
      const result = await provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'full', dryRun: false, force: false });
      expect(result.plan.counts).toMatchObject({ 'create-user': 1 });
      expect([...new Set(result.applied?.audit.map((r) => r.status))]).toEqual(['succeeded']);
      expect(findUser(h.sim.state, joiner.email)?.hasAccess).toBe(true);
    } finally {
      files.cleanup();
    }
  });

  it('refuses a sentinel URL without a master name, naming REDIS_URL, with an example, password masked', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis+sentinel://:s3cret@127.0.0.1:26379' })).toThrow(
      /REDIS_URL: got "redis\+sentinel:\/\/:\*\*\*@127\.0\.0\.1:26379"; expected the master's name after the sentinels .*e\.g\. redis\+sentinel:\/\//,
    );
    expect(() => loadConfig({ REDIS_URL: 'redis+sentinel://:s3cret@127.0.0.1:26379' })).not.toThrow(/s3cret/);
    expect(maskUrl(`redis+sentinel://:s3cret@127.0.0.1:1,127.0.0.1:2/mymaster?sentinelPassword=other`)).toBe('redis+sentinel://:***@127.0.0.1:1,127.0.0.1:2/mymaster?sentinelPassword=***');
  });
});
