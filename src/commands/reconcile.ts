import { fitTable } from './render/fit-table.ts';
import { InvalidArgumentError, type Command } from 'commander';
import { errorMessage } from '../lib/errors.ts';
import { parseMaxDisable } from '../settings/max-disable.ts';
import type { MaxDisable } from '../provisioning/plan/types.ts';
import { toInfrastructureError } from '../lib/infra-errors.ts';
import { NotMigratedError } from '../warehouse/migrator.ts';
import { requireMigratedAt } from '../warehouse/command-pools.ts';
import { openAppScopes } from '../warehouse/app-role.ts';
import { RECONCILIATION_KINDS, reconciliationReport, type ReconciliationReport } from '../provisioning/reconciliation.ts';
import type { CommandDeps } from './options/deps.ts';
import { runReconcileFix } from './reconcile-fix.ts';
import { confirmCountOption } from './options/confirm-option.ts';
import { exitWith } from './options/exit-codes.ts';
import { fitText } from './render/terminal.ts';
import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import { describePlatformListAge } from '../provisioning/platform-list-age.ts';
import { requestedOrgs, selectOneOrg, selectOrgs } from './options/org-option.ts';

export interface ReconcileCommandDeps extends Pick<CommandDeps, 'loadConfig' | 'createLogger' | 'jobs'> {
  /** Where the report goes. Default: process.stdout. */
  write?: (text: string) => void;
}

/** What each kind means, for a person reading the report. */
const MEANING: Readonly<Record<string, string>> = {
  active_without_account: 'active in HR, no platform account',
  leaver_with_access: 'inactive or gone from HR, account still has access',
  account_without_employee: 'account with access that no HR employee lists',
  pending_action: 'provisioning action failed or needs an identity',
};

function maxDisableOption(value: string): MaxDisable {
  try {
    return parseMaxDisable(value);
  } catch (error) {
    throw new InvalidArgumentError(errorMessage(error));
  }
}

function examplesOption(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) > 1000) throw new InvalidArgumentError('expected a whole number from 0 to 1000, e.g. 5');
  return Number(value);
}

/** The report as a person reads it: counts per kind, then the examples of each. */
export function renderReconciliation(report: ReconciliationReport): string {
  // Drawn to the terminal's width (at most 100): the meaning wraps in its column.
  const counts = fitTable(['kind', 'count', 'meaning'], RECONCILIATION_KINDS.map((kind) => [kind, report.counts[kind], MEANING[kind] ?? '']));
  const age = describePlatformListAge(report);
  const lines = [`HR against the platform: ${report.total} discrepanc${report.total === 1 ? 'y' : 'ies'} (training.hr_reconciliation)`, ...(age ? [age] : []), counts];
  // Zero discrepancies against nothing is no news: say what is missing.
  // The `default` organisation (one organisation, no orgs file) reads as before; another names itself.
  const of = report.org === DEFAULT_ORG ? { table: 'is empty', flag: '' } : { table: `has no row of ${report.org}`, flag: ` --org ${report.org}` };
  if (!report.hrFeedLoaded) lines.unshift(`No HR feed has been loaded yet (training.employees ${of.table}): run \`trainsync load-feed FILE${of.flag}\` or \`trainsync provision FILE${of.flag}\` first.`);
  if (!report.usersLoaded) lines.unshift(`No platform users have been synced yet (training.users ${of.table}): run \`trainsync sync users${of.flag}\` first.`);
  for (const kind of RECONCILIATION_KINDS) {
    const rows = report.examples[kind];
    if (rows.length === 0) continue;
    const more = report.counts[kind] - rows.length;
    lines.push('', `${kind}${more > 0 ? ` (first ${rows.length} of ${report.counts[kind]})` : ''}:`);
    for (const row of rows) {
      const who = [row.employee_id, row.email, row.user_id].filter((v) => v !== null && v !== '').join('  ');
      lines.push(`  ${who}\n    ${row.detail}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** `trainsync reconcile`: HR against the platform, from the warehouse alone (no API call, no Redis). */
export function registerReconcileCommand(program: Command, deps: ReconcileCommandDeps): void {
  const command = program
    .command('reconcile')
    .description('HR against the platform: counts and examples of each discrepancy kind (training.hr_reconciliation).')
    .option('--json', 'print {"counts", "total", "examples"} as JSON')
    .option('--examples <n>', 'examples shown per kind', examplesOption, 5)
    .option('--fix', 'repair drift: plan the last HR snapshot (training.employees) against the platform as it is now, and apply it')
    .option('--dry-run', 'with --fix: print the repairs and change nothing')
    .option('--force', 'with --fix: apply past the seat limit; past the disable limit only with --confirm N')
    .option('--confirm <n>', 'with --fix --force: the number of people the repair takes access from (a plan past the disable limit needs it)', confirmCountOption)
    .option('--allow-shrink', 'with --fix: plan a snapshot that lists fewer employees than TRAINSYNC_FEED_MIN_SHARE of the active ones (the disable limit still stands)')
    .option('--max-disable <N|P%>', 'with --fix: refuse a plan that disables more (default: the larger of 5 and 10% of active employees)', maxDisableOption)
    .option('--reassert-groups', 'with --fix: add again every group membership on record (the API cannot read memberships; one write each)')
    .addHelpText(
      'after',
      `
Reads the warehouse only: training.employees (filled by provision and load-feed),
training.users (sync users) and the provisioning actions. Sync users first for an
up-to-date picture. Kinds:
  active_without_account    active in HR, no platform account (none linked or with the e-mail)
  leaver_with_access        inactive or no longer in the feed, but the account has access
  account_without_employee  an account with access that no HR employee lists
  pending_action            the latest provisioning action of its kind failed or needs an identity
Exit status 0 whatever it finds (use --json and count in a script to alert).

--fix repairs drift without a new feed: the employees of training.employees that
trainsync has applied are planned again against the platform's accounts (GET users, or
training.users when a users sync ran after the last provisioning write and within
TRAINSYNC_PLATFORM_FRESHNESS_MINUTES). A leaver with access is disabled again, an
account deleted by hand is created again, an active employee's removed access is
restored (TRAINSYNC_DRIFT_ACCESS_REMOVED). Same guards, audit and exit status as
provision: 0 applied, 1 actions failed or need an identity, 2 refused (a snapshot far
shorter than the workforce, a limit, the seats, a missing or wrong --confirm, an API key the
platform refuses). A snapshot whose removed employees still have access and that lists
fewer than TRAINSYNC_FEED_MIN_SHARE of the active employees (a feed cut short loaded with
load-feed) is refused before planning, as provision refuses the feed (--allow-shrink if it
is right). Past the disable limit the repair is held (\`trainsync held\`); --force applies
it only with --confirm N, N the number of people it takes access from now.

Several organisations (TRAINSYNC_ORGS_FILE): each organisation's employees are compared with
the accounts its own key lists. --org SLUG (repeatable, or all) reports each named
organisation in turn (--json: {"organisations": [report, ...]} when several); --fix works
on one organisation at a time.

Examples:
  trainsync reconcile
  trainsync reconcile --json | jq '.counts'
  trainsync reconcile --examples 20
  trainsync reconcile --fix --dry-run
  trainsync reconcile --fix --json
  trainsync reconcile --org all`,
    )
    .action(async (options: { json?: boolean; examples: number; fix?: boolean; dryRun?: boolean; force?: boolean; confirm?: number; allowShrink?: boolean; maxDisable?: MaxDisable; reassertGroups?: boolean }) => {
      const write = deps.write ?? ((text: string): void => void process.stdout.write(text));
      const requested = requestedOrgs(command);
      if (options.fix) {
        const { code, reason } = await runReconcileFix(deps, options, write, (config) => selectOneOrg(config, requested));
        exitWith(code, reason);
        return;
      }
      const fixOnly = (['dryRun', 'force', 'confirm', 'allowShrink', 'maxDisable', 'reassertGroups'] as const).filter((k) => options[k] !== undefined);
      if (fixOnly.length > 0) {
        const flags = fixOnly.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ');
        command.error(`error: ${flags} only go with --fix: add --fix, or leave them out`, { exitCode: 2, code: 'trainsync.usage' });
      }
      const config = deps.loadConfig();
      const orgs = selectOrgs(config, requested);
      const log = deps.createLogger(config);
      let app: Awaited<ReturnType<typeof openAppScopes>> | undefined;
      try {
        // Reads only: a missing or unmigrated database is refused (exit 2), never created.
        await requireMigratedAt(config.DATABASE_URL, log);
        app = await openAppScopes(config.DATABASE_URL, log);
        const reports: ReconciliationReport[] = [];
        for (const org of orgs) reports.push(await reconciliationReport(app.scopes.scope(org.slug), options.examples));
        if (options.json) write(`${JSON.stringify(reports.length === 1 ? reports[0] : { organisations: reports }, null, 2)}\n`);
        // One organisation (the single-organisation case included) reads as before; several, each under its name.
        else write(fitText(reports.length === 1 ? renderReconciliation(reports[0]!) : reports.map((r) => `== organisation ${r.org} ==\n${renderReconciliation(r)}`).join('\n')));
      } catch (error) {
        if (error instanceof NotMigratedError) throw error;
        throw toInfrastructureError(error, config, 'postgres') ?? error;
      } finally {
        await app?.close();
      }
    });
}
