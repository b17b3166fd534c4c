import { QueueEvents, type Job } from 'bullmq';
import type { Config } from '../config.ts';
import { errorMessage } from '../errors.ts';
import { createRedisConnection } from './connection.ts';
import { queueKeys } from './keys.ts';
import type { QueueName } from './names.ts';

export interface JobOutcome {
  jobId: string;
  name: string;
  status: 'completed' | 'failed';
  result?: unknown;
  error?: string;
}

/**
 * Waits until every job has completed or failed for good (retries included),
 * reporting progress events as they come.
 */
export async function waitForJobs(
  config: Config,
  queue: QueueName,
  jobs: readonly Job[],
  onProgress?: (jobId: string, progress: unknown) => void,
): Promise<JobOutcome[]> {
  // Read events from the stream's current end, not from '$' at the first XREAD: that
  // starts only after waitUntilReady, and a job finishing in between (after its
  // isFinished check) would never be reported, so the wait would hang.
  const redis = createRedisConnection(config.REDIS_URL);
  const [last] = await redis.xrevrange(queueKeys(config.TRAINSYNC_QUEUE_PREFIX, queue).events, '+', '-', 'COUNT', 1).finally(() => redis.disconnect());
  const events = new QueueEvents(queue, { connection: { url: config.REDIS_URL }, prefix: config.TRAINSYNC_QUEUE_PREFIX, lastEventId: last?.[0] ?? '0-0' });
  try {
    await events.waitUntilReady();
    if (onProgress) events.on('progress', ({ jobId, data }) => onProgress(jobId, data));
    return await Promise.all(
      jobs.map(async (job): Promise<JobOutcome> => {
        try {
          const result: unknown = await job.waitUntilFinished(events);
          return { jobId: String(job.id), name: job.name, status: 'completed', result };
        } catch (error) {
          return { jobId: String(job.id), name: job.name, status: 'failed', error: errorMessage(error) };
        }
      }),
    );
  } finally {
    await events.close();
  }
}
