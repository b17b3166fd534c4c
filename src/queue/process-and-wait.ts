import type { ActionQueue } from './action-queue.ts';
import type { QueueName } from './names.ts';
import type { JobOutcome } from './wait-for-jobs.ts';

export interface ProcessAndWaitOptions {
  onProgress?: (jobId: string, progress: unknown) => void;
  /** Aborting stops the wait with `interrupted()`; jobs this process was running go back to the queue. */
  signal?: AbortSignal;
  /** The error an aborted wait rejects with (the caller's, so it can say what to do next). */
  interrupted?: () => Error;
}

/**
 * The rule of every command that enqueues work and waits for it (`sync`, `provision`):
 * when no worker is connected to the queue, this process works it while it waits.
 * Resolves with one outcome per job id once each has completed or failed for good.
 */
export async function processAndWait(queue: Pick<ActionQueue, 'processHereIfNoWorker' | 'waitFor'>, name: QueueName, jobIds: readonly string[], options: ProcessAndWaitOptions = {}): Promise<JobOutcome[]> {
  if (jobIds.length === 0) return [];
  const worker = await queue.processHereIfNoWorker(name);
  try {
    const waiting = queue.waitFor(name, jobIds, options.onProgress);
    const { signal } = options;
    if (!signal) return await waiting;
    waiting.catch(() => undefined);
    const interrupted = options.interrupted ?? (() => new Error('interrupted'));
    const aborted = new Promise<never>((_resolve, reject) => {
      if (signal.aborted) reject(interrupted());
      signal.addEventListener('abort', () => reject(interrupted()), { once: true });
    });
    return await Promise.race([waiting, aborted]);
  } finally {
    await worker?.close();
  }
}
