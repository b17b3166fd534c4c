import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import { mapConcurrent } from '../src/lib/map-concurrent.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { createJobCatalog, lookupJob } from '../src/queue/catalog.ts';
import { isPermanentError } from '../src/queue/run-job.ts';
import { ConfigError } from '../src/config.ts';
import { PROVISION_JOBS } from '../src/provisioning/apply/actions.ts';
import { LOAD_WEBHOOK_RESULT_JOB } from '../src/webhooks/enqueue.ts';

const job = (name: string) => defineJob({ name, queue: SYNC_QUEUE, payload: z.object({}), run: async () => name });
/** Every job the catalog requires, stand-ins for all but the ones a test adds. */
const allBut = (...names: string[]) => allJobs.map((j) => j.name).filter((n) => !names.includes(n)).map(job);

describe('job catalog', () => {
  it('holds every job of jobs/index.ts under its own name', () => {
    const catalog = createJobCatalog(allJobs);
    for (const name of allJobs.map((j) => j.name)) expect(lookupJob(catalog, name).name).toBe(name);
  });
  it('refuses a job registered twice, and names it', () => {
    expect(() => createJobCatalog([...allBut('sync-seats'), job('sync-seats'), job('sync-seats')])).toThrow(/"sync-seats" is registered twice/);
  });
  it('refuses a job without a name', () => {
    expect(() => createJobCatalog([...allBut(), job('')])).toThrow(/has no name/);
  });
  it('declares every job the wings enqueue by name, and marks only those', () => {
    // The names the planner's actions and the webhook loader enqueue: each needs a declaration
    // in jobs/index.ts saying so, else a queued job would find no handler.
    const enqueued = [...Object.values(PROVISION_JOBS), LOAD_WEBHOOK_RESULT_JOB].sort();
    const declared = allJobs.filter((j) => j.enqueuedByName === true).map((j) => j.name).sort();
    expect(declared).toEqual(enqueued);
  });
  it('names the known jobs when asked for an unknown one', () => {
    expect(() => lookupJob(createJobCatalog(allBut()), 'zzz')).toThrow(/known: sync-courses/);
  });
  it('fails permanent errors at once and retries the rest', () => {
    expect(isPermanentError(Object.assign(new Error('bad'), { retryable: false }))).toBe(true);
    expect(isPermanentError(Object.assign(new Error('429'), { retryable: true }))).toBe(false);
    expect(isPermanentError(new ConfigError(['X: missing']))).toBe(true);
    expect(isPermanentError(new Error('connection reset'))).toBe(false);
  });
});

describe('mapConcurrent', () => {
  it('never runs more than the limit at once and runs every item', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    await mapConcurrent([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5));
      seen.push(n);
      running -= 1;
    });
    expect(most).toBe(3);
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });
  it('stops starting new items after a failure and rethrows it', async () => {
    const started: number[] = [];
    await expect(
      mapConcurrent([1, 2, 3, 4, 5], 1, async (n) => {
        started.push(n);
        if (n === 2) throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(started).toEqual([1, 2]);
  });
});

