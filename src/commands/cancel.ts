import { scopedApp } from './options/scoped.ts';
import type { Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import { cancelQueuedOrOrphaned } from '../sync/cancel-sync.ts';
import { syncResources } from '../sync/catalog-resources.ts';
import type { CommandDeps } from './options/deps.ts';
import { RefusedError } from './options/exit-codes.ts';
import { requestedOrgs, selectOneOrg } from './options/org-option.ts';

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
  trainsync cancel 14             # job 14, in whichever queue holds it
  trainsync cancel results --org north   # with several organisations: north's sync of results

Cancels within one organisation (--org; the only one when just one is configured): a
resource names that organisation's sync, and a job id of another organisation is refused.`,
    )
    .action(async (target: string, _options: unknown, command: Command) => {
      const config = deps.loadConfig();
      const org = selectOneOrg(config, requestedOrgs(command));
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
      try {
        const outcome = await cancelQueuedOrOrphaned(scopedApp(app, org.slug), target, `\`trainsync cancel ${target}\``);
        if (!outcome.ok) throw new RefusedError(outcome.reason);
        const { job, how, runs } = outcome;
        process.stdout.write(`cancelled job ${job.id} (${job.name}, ${how})${runs > 0 ? `; its run recorded as cancelled` : ''}\n`);
      } finally {
        await app.close();
      }
    });
}
