import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobOptions } from '../src/queue/job-options.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import type { WorkerHandle } from '../src/queue/worker.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { logRecords, waitFor } from './helpers/worker-process.ts';

/**
 * Two syncs of one resource at once (two jobs, not deduplicated, both taken by a worker
 * with room for both): the second finds the resource's lock taken, goes back to the
 * queue without spending an attempt, and runs once the first has finished; the two
 * runs never overlap.
 */
describe('two syncs of one resource at once', () => {
  let h: SyncHarness;
  let worker: WorkerHandle | undefined;

  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { sizes: { courses: 30, results: 0, users: 10 } }, env: { TRAINSYNC_WORKER_CONCURRENCY: '4' } });
    worker = await h.app.queue.startWorkers([SYNC_QUEUE]);
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  const add = (): Promise<Job> => h.app.queue.queues[SYNC_QUEUE].add('sync-courses', { trigger: 'cli', full: false }, defaultJobOptions(h.config));
  const runsOf = async (jobId: string | undefined): Promise<Array<{ id: number; status: string; started_at: Date; finished_at: Date | null }>> =>
    (await h.database.pool.query("select id, status, started_at, finished_at from trainsync.runs where resource = 'courses' and job_id = $1", [String(jobId)])).rows;
  const attemptLines = (jobId: string | undefined): Array<Record<string, unknown>> =>
    logRecords(h.logLines.join('')).filter((r) => r.jobId === jobId && r.msg === 'job finished');

  it('puts the second back while the first holds the lock, then runs it after', async () => {
    // The first holds the lock while its page takes its time at the simulator.
    h.sim.setFaults({ latencyMs: 1_500 });
    const first = await add();
    await waitFor(async () => ((await runsOf(first.id))[0]?.status === 'running' ? true : undefined), 30_000, 'the first sync to be running');

    const second = await add();
    await waitFor(async () => (attemptLines(second.id).length > 0 ? true : undefined), 30_000, 'the second sync to be tried');
    expect(attemptLines(second.id)).toEqual([
      expect.objectContaining({ outcome: 'delayed', lockKey: 'sync-courses', reason: 'another worker is running this job; trying again shortly' }),
    ]);
    // Back in the queue (not failed), no run started for it, and the first still running.
    expect(await h.app.queue.state(SYNC_QUEUE, String(second.id))).toBe('delayed');
    expect(await runsOf(second.id)).toEqual([]);
    expect((await runsOf(first.id))[0]?.status).toBe('running');

    h.sim.setFaults({ latencyMs: 0 });
    const done = async (job: Job): Promise<boolean | undefined> => ((await h.app.queue.state(SYNC_QUEUE, String(job.id))) === 'completed' ? true : undefined);
    await waitFor(() => done(first), 30_000, 'the first sync to complete');
    await waitFor(() => done(second), 30_000, 'the second sync to complete');

    const [a] = await runsOf(first.id);
    const [b] = await runsOf(second.id);
    expect([a?.status, b?.status]).toEqual(['succeeded', 'succeeded']);
    // One after the other: the second started only after the first had finished.
    expect(b!.started_at.getTime()).toBeGreaterThanOrEqual(a!.finished_at!.getTime());
    // Its wait for the lock spent no attempt.
    expect((await h.app.queue.queues[SYNC_QUEUE].getJob(String(second.id)))?.attemptsMade).toBe(1);
    expect(attemptLines(second.id).map((r) => r.outcome)).toEqual(['delayed', 'completed']);
  });
});
