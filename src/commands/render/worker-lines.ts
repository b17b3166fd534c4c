import type { Job, Worker } from 'bullmq';
import { utcMinute } from '../../lib/utc-minute.ts';

/** A job as a worker's line names it: its name, id and organisation (when not `default`). */
function jobLabel(job: Job): string {
  const data = job.data as { org?: unknown } | undefined;
  const org = typeof data?.org === 'string' && data.org !== 'default' ? ` of ${data.org}` : '';
  return `${job.name}${org} (job ${job.id ?? '?'})`;
}

/** The line a worker shows for one event of a job; `at` is the moment it happened. */
export function workerJobLine(event: 'started' | 'finished' | 'failed', job: Job, at: Date, reason?: string): string {
  const why = event === 'failed' && reason ? `: ${reason.split('\n')[0]}` : '';
  return `${utcMinute(at)}  ${event.padEnd(8)} ${jobLabel(job)}${why}`;
}

/**
 * On a terminal, the worker says one line per job started and ended (its log, at warn and
 * above there, says only what went wrong): a person who started it sees it work. Returns a
 * function that stops the lines.
 */
export function showJobLines(workers: readonly Worker[], say: (line: string) => void): () => void {
  const off: Array<() => void> = [];
  for (const worker of workers) {
    const active = (job: Job): void => say(workerJobLine('started', job, new Date()));
    const completed = (job: Job): void => say(workerJobLine('finished', job, new Date()));
    // A failed attempt that will be retried is said too: the job ended here, for now.
    const failed = (job: Job | undefined, error: Error): void => {
      if (job) say(workerJobLine('failed', job, new Date(), error.message));
    };
    worker.on('active', active);
    worker.on('completed', completed);
    worker.on('failed', failed);
    off.push(() => {
      worker.off('active', active);
      worker.off('completed', completed);
      worker.off('failed', failed);
    });
  }
  return () => off.forEach((stop) => stop());
}
