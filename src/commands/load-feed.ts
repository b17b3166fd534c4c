import { stderrLine, stderrText } from './render/terminal.ts';
import type { Command } from 'commander';
import { toInfrastructureError } from '../lib/infra-errors.ts';
import { readFeed } from '../provisioning/feed/read.ts';
import { formatFeedErrors } from './render/provision-report.ts';
import { formatSnapshotCounts, snapshotFeed } from '../provisioning/snapshot-feed.ts';
import type { PlanMode } from '../provisioning/plan/types.ts';
import { prepareAsOwner } from '../warehouse/command-pools.ts';
import { openAppScopes, ownerRefusal } from '../warehouse/app-role.ts';
import type { CommandDeps } from './options/deps.ts';
import { requireFeedFile } from './options/feed-file.ts';
import { addFeedOptions, addModeOption, FEED_PROFILE_HELP, feedReadingOrExit, withOrgProfile, type FeedCliOptions } from './options/feed-options.ts';
import { requestedOrgs, selectOneOrg } from './options/org-option.ts';

interface LoadFeedCliOptions extends FeedCliOptions {
  mode: PlanMode;
  json?: boolean;
}

/**
 * `trainsync load-feed FILE`: the warehouse's copy of an HR feed (training.employees and
 * employee_history) without provisioning anything. Needs Postgres only: no platform
 * settings, no Redis.
 */
export function registerLoadFeedCommand(program: Command, deps: Pick<CommandDeps, 'loadConfig' | 'createLogger'>): void {
  const command = program
    .command('load-feed')
    .description('Snapshot an HR feed into the warehouse (training.employees, training.employee_history) without changing the platform.');
  addModeOption(addFeedOptions(command), 'employees the feed no longer lists are marked removed')
    .option('--json', 'print the row errors and the counts as one JSON document')
    .addHelpText(
      'after',
      `
Each employee the feed lists is inserted or updated in training.employees; a change of
status, e-mail, name or attributes closes the employee's current training.employee_history
row and opens a new one. In full mode, employees no longer listed get removed_at and their
history row is closed (listed again later, they come back with a new history row). A
rejected row changes nothing, and its employee is never marked removed. A file that
cannot be read changes nothing at all. Runs in one transaction.

Needs DATABASE_URL (migrated on the way); no TRAINSYNC_API_URL, no Redis. With several
organisations, --org SLUG names the one whose employees these are (its feedProfile is
used when --profile is not given); other organisations' employees are not touched.
${FEED_PROFILE_HELP}

Exit status: 0 loaded; 1 loaded, but some rows were rejected (listed); 2 the file or the
profile cannot be read, nothing changed.

Examples:
  trainsync load-feed hr.csv
  trainsync load-feed changes.csv --mode delta
  trainsync load-feed export.csv --profile examples/semicolon-profile.json --json`,
    )
    .action(async (file: string, cliOptions: LoadFeedCliOptions, command: Command) => {
      // The organisation only when a profile must come from it: without the orgs file a
      // feed that cannot be read is reported before any setting is looked at.
      const needsOrg = cliOptions.profile === undefined || requestedOrgs(command).length > 0;
      const chosen = needsOrg ? selectOneOrg(deps.loadConfig(), requestedOrgs(command)) : undefined;
      const options = chosen ? withOrgProfile(cliOptions, chosen) : cliOptions;
      await requireFeedFile(file);
      const reading = await feedReadingOrExit(file, options);
      if (reading === undefined) return;
      const feed = await readFeed(file, reading.options);
      const errors = formatFeedErrors(feed);
      if (feed.fileErrors.length > 0) {
        if (options.json) process.stdout.write(`${JSON.stringify({ fileErrors: feed.fileErrors, errors: feed.errors, employees: null }, null, 2)}\n`);
        process.exitCode = 2;
        if (!options.json) {
          for (const line of errors) stderrText(line);
          stderrLine('the feed could not be read; no employee was changed');
        }
        return;
      }
      const config = deps.loadConfig();
      const org = chosen ?? selectOneOrg(config, requestedOrgs(command));
      const log = deps.createLogger(config);
      try {
        await prepareAsOwner(config.TRAINSYNC_OWNER_DATABASE_URL, config.DATABASE_URL, log);
        // The migrations are the owner's; the load is the organisation's, through its scoped handle.
        const app = await openAppScopes(config.DATABASE_URL, log);
        const counts = await snapshotFeed(app.scopes.scope(org.slug), feed, { mode: options.mode }).finally(() => app.close());
        if (options.json) process.stdout.write(`${JSON.stringify({ fileErrors: [], errors: feed.errors, employees: counts }, null, 2)}\n`);
        else {
          if (errors.length > 0) process.stdout.write(`${errors.join('\n')}\n`);
          process.stdout.write(`${formatSnapshotCounts(counts)} (${options.mode} feed${feed.errors.length > 0 ? `; ${feed.errors.length} row errors, those employees left as they were` : ''})\n`);
        }
        process.exitCode = feed.errors.length > 0 ? 1 : 0;
      } catch (error) {
        throw ownerRefusal(error, config) ?? toInfrastructureError(error, config, 'postgres') ?? error;
      }
    });
}
