import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { syncJobName, syncResources } from '../src/sync/catalog-resources.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

describe('two workers started together', () => {
  let h: SyncHarness;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 50, users: 20 } },
      env: {
        // Seats every 2 seconds (cron with a seconds field); the others never during the test.
        TRAINSYNC_CRON_SEATS: '*/2 * * * * *',
        TRAINSYNC_CRON_RESULTS: '0 0 1 1 *',
        TRAINSYNC_CRON_COURSES: '0 0 1 1 *',
        TRAINSYNC_CRON_FILTERS: '0 0 1 1 *',
        TRAINSYNC_CRON_USERS: '0 0 1 1 *',
      },
    });
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h?.close();
  });

  it('run each scheduled sync once', async () => {
    workers.push(startWorkerProcess(h.env), startWorkerProcess(h.env));
    await Promise.all(workers.map((w) => w.ready));
    const succeeded = async (): Promise<number> =>
      (await h.database.pool.query<{ n: number }>("select count(*)::int as n from trainsync.runs where resource = 'seats' and status = 'succeeded'")).rows[0]!.n;
    // Three ticks' worth of runs, however long a busy machine takes to get there.
    await waitFor(async () => ((await succeeded()) >= 3 ? true : undefined), 60_000, 'three scheduled seat syncs');
    for (const w of workers) w.child.kill('SIGTERM');
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);

    const schedulers = await h.app.queue.queues[SYNC_QUEUE].getJobSchedulers();
    // One scheduler per resource of the catalog (the workers' jobs/index.ts), and none other.
    const expected = syncResources(allJobs).map((resource) => syncJobName(allJobs, resource));
    expect(expected).toContain('sync-seats');
    expect(schedulers.map((s) => s.key).sort()).toEqual(expected.sort());

    const runs = await h.database.pool.query<{ job_id: string; status: string }>(
      "select job_id, status from trainsync.runs where resource = 'seats' order by started_at",
    );
    // Each tick made one job (named after its tick, on the 2 s grid), and each job ran once.
    expect(runs.rows.length).toBeGreaterThanOrEqual(3);
    expect(new Set(runs.rows.map((r) => r.job_id)).size).toBe(runs.rows.length);
    const ticks = runs.rows.map((r) => Number(/^repeat:sync-seats:(\d+)$/.exec(r.job_id)?.[1]));
    expect(ticks.every((tick) => Number.isInteger(tick) && tick % 2_000 === 0), runs.rows.map((r) => r.job_id).join(', ')).toBe(true);
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(runs.rows.every((r) => r.status === 'succeeded')).toBe(true);
    const seatRows = await h.database.pool.query('select count(*)::int as n from training.seat_usage');
    expect(seatRows.rows[0]?.n).toBe(runs.rows.length);
    // Nothing but seats ran.
    const others = await h.database.pool.query("select count(*)::int as n from trainsync.runs where resource <> 'seats'");
    expect(others.rows[0]?.n).toBe(0);
  });
});
