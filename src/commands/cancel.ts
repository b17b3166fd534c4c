import type { Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import type { FoundJob, JobQueue } from '../queue/job-queue.ts';
import { SYNC_QUEUE } from '../queue/names.ts';
import { syncJobName, syncResources } from '../sync/resources.ts';
import { cancelRunsOfJob } from '../sync/sync-state.ts';
import type { CommandDeps } from './deps.ts';
import { RefusedError } from './exit-codes.ts';

/** `trainsync cancel <resource|job id>`: the way out of a stuck job. */
export function registerCancelCommand(program: Command, deps: CommandDeps): void {
  const resources = syncResources(deps.jobs);
  program
    .command('cancel')
    .description('Remove a queued or orphaned job (its process is gone) and record its run as cancelled.')
    .argument('<resource|job-id>', `a sync resource (${resources.join(', ')}): its queued or orphaned sync; or a job id (as \`trainsync status\` shows)`)
    .addHelpText(
      'after',
      `
A job is orphaned when the process that took it is gone (a sync killed from outside) or
its lock expired. A job a live worker is running is refused (exit 2): stop that process
(Ctrl-C, or SIGTERM for a worker) and the job goes back to the queue, or let it finish.
A new \`trainsync sync\` of the same resource takes an orphaned job over by itself.

Examples:
  trainsync cancel results        # the queued or orphaned sync of results
  trainsync cancel 14             # job 14, in whichever queue holds it`,
    )
    .action(async (target: string) => {
      const config = deps.loadConfig();
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
      try {
        const job = await findTarget(app.queue, target, resources, deps);
        const how = job.holder?.orphaned ? `orphaned: worker ${job.holder.worker ?? 'unknown'} is gone` : job.state;
        if (!(await app.queue.cancel(job))) throw new RefusedError(`job ${job.id} (${job.name}) was taken by a worker a moment ago; nothing was removed`);
        const runs = await cancelRunsOfJob(app.db, job.id, `cancelled by \`trainsync cancel ${target}\` (${how})`);
        process.stdout.write(`cancelled job ${job.id} (${job.name}, ${how})${runs > 0 ? `; its run recorded as cancelled` : ''}\n`);
      } finally {
        await app.close();
      }
    });
}

async function findTarget(queue: JobQueue, target: string, resources: readonly string[], deps: CommandDeps): Promise<FoundJob> {
  const job = await cancelTargetState(queue, target, resources, deps);
  if (job.state === 'completed' || job.state === 'failed') throw new RefusedError(`job ${job.id} (${job.name}) already ${job.state}; nothing to cancel`);
  if (job.state === 'active' && !job.holder?.orphaned) {
    throw new RefusedError(`job ${job.id} (${job.name}) is running on worker ${job.holder?.worker ?? 'unknown'}; stop that process (Ctrl-C, or SIGTERM for a worker) to hand it back, or let it finish`);
  }
  return job;
}

async function cancelTargetState(queue: JobQueue, target: string, resources: readonly string[], deps: CommandDeps): Promise<FoundJob> {
  if (resources.includes(target)) {
    const name = syncJobName(deps.jobs, target);
    const job = await queue.deduplicated(SYNC_QUEUE, name);
    if (!job) throw new RefusedError(`no sync of ${target} is queued or running; nothing to cancel`);
    return job;
  }
  const job = await queue.find(target);
  if (!job) throw new RefusedError(`no job ${target} in any queue, and no resource of that name (${resources.join(', ')}); see \`trainsync status\``);
  return job;
}
