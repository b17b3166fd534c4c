import { errorMessage } from '../lib/errors.ts';
import { InvalidArgumentError, type Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import { requireOrgPlatform } from '../config.ts';
import { requestedOrgs, selectOneOrg } from './options/org-option.ts';
import { parseMaxDisable } from '../settings/max-disable.ts';
import type { MaxDisable, PlanMode } from '../provisioning/plan/types.ts';
import { writeFile } from 'node:fs/promises';
import { provisionFeed, type ProvisionResult } from '../provisioning/provision-feed.ts';
import { formatFeedErrors, formatOutcome, formatPlanReport, PROVISION_EXIT, provisionExitCode, provisionResultJson, shrinkRefusalJson } from './render/provision-report.ts';
import { readFeed } from '../provisioning/feed/read.ts';
import { loadGroupNames } from '../provisioning/group-names.ts';
import { formatPlanFile, PLAN_FILE_FORMAT_NAME, planFileFormat } from './render/plan-output.ts';
import { refusedReason, shrinkReason } from './render/refusal-line.ts';
import { formatSnapshotCounts } from '../provisioning/snapshot-feed.ts';
import { provisionDeps } from './options/provision-deps.ts';
import { confirmCountOption, confirmWithoutForce, forceConfirmation } from './options/confirm-option.ts';
import { requireFeedFile } from './options/feed-file.ts';
import { exitWith, UsageError, type ExitCode } from './options/exit-codes.ts';
import { tableWidth } from './render/fit-table.ts';
import { createProgressDisplay } from './render/progress-display.ts';
import { feedReadProgress } from './render/feed-progress.ts';
import { fitText, stderrLine } from './render/terminal.ts';
import type { CommandDeps } from './options/deps.ts';
import { addFeedOptions, addModeOption, FEED_PROFILE_HELP, feedReadingOrExit, withOrgProfile, type FeedCliOptions } from './options/feed-options.ts';

/** The one line said last when provision exits non-zero. */
function provisionExitReason(result: ProvisionResult, options: { dryRun: boolean; json: boolean }): string | undefined {
  const refused = result.plan.refused;
  if (refused) return refusedReason(refused, { disables: result.plan.counts.disable, limit: result.plan.maxDisable, heldPlanId: result.heldPlanId, ...options });
  const rejected = result.feed.errors.length + result.plan.errors.length;
  const attention = result.applied?.audit.filter((r) => r.status === 'failed' || r.status === 'needs-identity').length ?? 0;
  const parts = [
    rejected > 0 ? `${rejected} row${rejected === 1 ? '' : 's'} rejected (${(result.feed.errors[0] ?? result.plan.errors[0])?.message ?? 'see above'})` : '',
    attention > 0 ? `${attention} action${attention === 1 ? '' : 's'} failed or need an identity (see \`trainsync status\`)` : '',
  ].filter(Boolean);
  return parts.length > 0 ? parts.join('; ') : undefined;
}

function maxDisable(value: string): MaxDisable {
  try {
    return parseMaxDisable(value);
  } catch (error) {
    throw new InvalidArgumentError(errorMessage(error));
  }
}

interface ProvisionCliOptions extends FeedCliOptions {
  mode: PlanMode;
  dryRun?: boolean;
  output?: string;
  json?: boolean;
  maxDisable?: MaxDisable;
  force?: boolean;
  confirm?: number;
  allowShrink?: boolean;
}

export function registerProvisionCommand(program: Command, deps: CommandDeps): void {
  const command = program
    .command('provision')
    .description('Read an HR feed, print the plan, enqueue the actions (create, disable, enable, group changes) and wait for them.');
  addModeOption(addFeedOptions(command), 'employees missing from the feed are leavers')
    .option('--dry-run', 'print the plan (the count of each action, 5 examples each) and change nothing')
    .option('--output <file>', 'with --dry-run: write every action to FILE: CSV for .csv, the whole plan as one JSON document for .json, else JSON Lines')
    .option('--json', 'print the feed errors, the plan and the outcome as one JSON document')
    .option('--max-disable <N|P%>', 'refuse a plan that disables more (default: the larger of 5 and 10% of active employees)', maxDisable)
    .option('--force', 'enqueue past the seat limit; past the disable limit only with --confirm N')
    .option('--confirm <n>', 'with --force: the number of people the plan takes access from (a plan past the disable limit needs it)', confirmCountOption)
    .option('--allow-shrink', 'plan a full feed that lists fewer rows than TRAINSYNC_FEED_MIN_SHARE of the active employees (or none)')
    .addHelpText(
      'after',
      `
Feed fields (CSV header or JSON keys): employee_id and email (required), first_name and
last_name (required for new employees), status (active/inactive; terminated, leave… are
inactive), groups (group GUIDs separated by ;), role (USER/ADMIN), organisation_identifier
(default employee_id), platform_user_id (optional GUID).

Every bad row is reported with its file, line, field and the fix, and left out; an
employee whose row was rejected is never taken for a leaver. On the first run against an
organisation that already has users, existing accounts that match a row (by e-mail, or
organisationIdentifier = employee_id) are adopted instead of created.

Drift: before planning, the platform's accounts are read (GET users, or training.users when a
users sync ran after the last provisioning write and within TRAINSYNC_PLATFORM_FRESHNESS_MINUTES).
A leaver whose access is back is disabled again, an account deleted by hand is created again,
an active employee's removed access is restored (TRAINSYNC_DRIFT_ACCESS_REMOVED); each such
action says why ("repair: …", and "repair" in --json). Group membership cannot be read through
the API: memberships follow what trainsync applied.

Safety: a full feed with no data rows, or with fewer than TRAINSYNC_FEED_MIN_SHARE (default 50%)
of the active employees trainsync knows, is refused before anything is planned (an export
that failed upstream); override with --allow-shrink. A plan that would disable more than
--max-disable employees (repairs included) is held for approval (\`trainsync held\`, or the
console), one that needs more seats than are free is refused; nothing is enqueued. Review it
with --dry-run. --force enqueues past the seat limit; past the disable limit it also needs
--confirm N, N the number of people the plan takes access from as it is planned now (a
wrong or missing N is refused, exit 2). The same feed enqueued twice never doubles an action,
and an unchanged feed makes no write call at all.

--dry-run prints the count of each action with 5 examples (group names, not GUIDs);
--output FILE writes every action: CSV for .csv, the whole plan as JSON for .json, else
JSON Lines (one action a line, with the group's GUID and name).

A run that applies (not --dry-run, not refused) also snapshots the feed into the
warehouse (training.employees and training.employee_history), like \`trainsync load-feed\`.
${FEED_PROFILE_HELP}

As with sync, the jobs are processed by a running \`trainsync worker\`, or by this process
when none is connected.

Several organisations (TRAINSYNC_ORGS_FILE): a feed is one organisation's; name it with
--org SLUG (one at a time). Its plan reads that organisation's accounts with its key, and its
employees, identities and audit rows are that organisation's only. Without --profile, the
organisation's feedProfile (if set) reads the feed.

For provision: 1 applied, but rows were rejected or actions failed or need an identity (see
\`trainsync status\`); 2 refused (a feed that shrank, a limit, the seats, an invalid profile, a
feed file that cannot be opened, an API key the platform refuses): nothing enqueued.

Examples:
  trainsync provision hr.csv --dry-run
  trainsync provision hr.csv --dry-run --output plan.csv
  trainsync provision export.csv --map "email=Work Email,employee_id=Person Number" --mode delta
  trainsync provision hr.jsonl --max-disable 25 --json
  trainsync provision hr.csv --force --confirm N      (N: the disables the plan shows)
  trainsync provision workday.csv --profile examples/workday-profile.json --dry-run
  trainsync provision north-hr.csv --org north`,
    )
    .action(async (file: string, cliOptions: ProvisionCliOptions, command: Command) => {
      if (cliOptions.output !== undefined && !cliOptions.dryRun) throw new UsageError('--output writes the plan of a --dry-run; add --dry-run');
      const withoutForce = confirmWithoutForce(cliOptions);
      if (withoutForce !== undefined) throw new UsageError(withoutForce);
      const config = deps.loadConfig();
      const org = selectOneOrg(config, requestedOrgs(command));
      const options = withOrgProfile(cliOptions, org);
      // Before anything touches Postgres or Redis: planning reads the platform.
      requireOrgPlatform(org);
      // A feed that cannot be opened, and a bad profile, are reported before any connection is made.
      await requireFeedFile(file);
      const reading = await feedReadingOrExit(file, options);
      if (reading === undefined) return;
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
      const width = tableWidth();
      const display = options.json ? undefined : createProgressDisplay({ log: app.log });
      // Sentences wrap at the width when it is known (a terminal, COLUMNS); tables are drawn to fit it.
      const say = (text: string): void => void process.stdout.write(fitText(text));
      try {
        const progress = options.json ? undefined : await feedReadProgress(file);
        const feed = await readFeed(file, { ...reading.options, onProgress: progress?.onProgress }).finally(() => progress?.stop());
        const dryRun = options.dryRun ?? false;
        const groupNames = await loadGroupNames(app.scopes.scope(org.slug));
        const result = await provisionFeed(provisionDeps(app, org.slug), {
          file,
          format: reading.format,
          map: reading.options.map,
          reading: reading.options,
          feed,
          mode: options.mode,
          dryRun,
          maxDisable: options.maxDisable,
          force: options.force ?? false,
          confirm: forceConfirmation(options.confirm),
          // The feed-shrink guard is the pipeline's (a full feed far shorter than the workforce is refused before planning).
          allowShrink: options.allowShrink ?? false,
          onPlan: (planned) => {
            if (!options.json) say(formatPlanReport(planned, file, { width, groupNames }));
          },
          // One line per action kind: created, disabled, groups joined…
          onProgress: (_finished, _total, byKind) => {
            for (const [kind, counts] of byKind) display?.update(kind, { resource: kind, ...counts, unit: 'actions' });
          },
        });
        if (result.shrink?.decision.refused) {
          display?.stop();
          if (options.json) process.stdout.write(`${shrinkRefusalJson(feed, result.shrink)}\n`);
          else say([`${file}: ${feed.rows.length} rows read, ${feed.errors.length} rejected (sha256 ${feed.hash.slice(0, 12)}…)`, ...formatFeedErrors(feed), `REFUSED (${result.shrink.decision.reason}): ${result.shrink.decision.message}`].join('\n'));
          exitWith(PROVISION_EXIT.refused, shrinkReason(result.shrink, options.json ?? false));
          return;
        }
        if (result.applied) for (const kind of new Set(result.applied.audit.map((r) => r.kind))) display?.finish(kind, 'done');
        display?.stop();
        if (options.dryRun && options.output !== undefined) {
          const format = planFileFormat(options.output);
          await writeFile(options.output, formatPlanFile(result.plan, format, groupNames));
          if (!options.json) say(`every action (${result.plan.actions.length}) is in ${options.output} (${PLAN_FILE_FORMAT_NAME[format]})`);
        }
        if (options.json) process.stdout.write(`${provisionResultJson(result)}\n`);
        else {
          if (result.plan.refused) {
            // Said last, by the exit reason.
          } else if (options.dryRun) say(`dry run: nothing was enqueued${options.output === undefined && result.plan.actions.length > 0 ? ' (every action: --output FILE, .csv for CSV, else JSON Lines)' : ''}`);
          if (result.applied) {
            const skipped = result.applied.skippedEmployees.length;
            if (skipped > 0) say(`${skipped} employees still have actions queued from an earlier run; waited for those and left them alone this run`);
            say(formatOutcome(result.applied.audit));
          }
          if (result.employees) say(`warehouse ${formatSnapshotCounts(result.employees)}`);
          if (result.employeesError) stderrLine(`the employee snapshot failed (the actions were applied): ${result.employeesError}`);
        }
        exitWith(provisionExitCode(result) as ExitCode, provisionExitReason(result, { dryRun, json: options.json ?? false }));
      } finally {
        display?.stop();
        await app.close();
      }
    });
}
