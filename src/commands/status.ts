import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import { InvalidArgumentError, type Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import type { CommandDeps } from './options/deps.ts';
import { requestedOrgs, selectOrgs } from './options/org-option.ts';
import { renderStatus } from './render/status-render.ts';
import { collectStatus, DETAIL_UP_TO, type StatusSection } from './status/status-report.ts';
import { renderSummary, streamStatusJson } from './render/status-summary.ts';

export type { SectionRows, StatusReport, StatusSection } from './status/status-report.ts';
export { collectStatus } from './status/status-report.ts';
export { renderStatus } from './render/status-render.ts';

const wholeNumber = (least: number) => (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < least) throw new InvalidArgumentError(`expected a whole number of at least ${least}, e.g. ${Math.max(least, 20)}`);
  return n;
};

interface StatusCliOptions {
  json?: boolean;
  limit?: number;
  offset?: number;
  staleAfter: number;
}

export function registerStatusCommand(program: Command, deps: CommandDeps, sections: readonly StatusSection[] = []): void {
  program
    .command('status')
    .description('Show queue counts, the last run per resource, watermarks, quarantined records and failed jobs.')
    .option('--json', 'print everything as one JSON document (with many organisations: written as it is read)')
    .option('--limit <n>', 'report at most n organisations (with --offset: a page of them, in the orgs file\'s order)', wholeNumber(1))
    .option('--offset <n>', 'skip the first n organisations', wholeNumber(0))
    .option('--stale-after <hours>', 'an organisation whose last good run of a resource ended longer ago than this is stale', wholeNumber(1), 48)
    .addHelpText(
      'after',
      `
Reads only: a missing or unmigrated database is refused with "run \`trainsync migrate\` first"
(exit 2) and nothing is created. A run still going reads "running (worker HOST:PID)"; one
whose process is gone reads "orphaned": \`trainsync cancel RESOURCE\` removes it, and the
next \`trainsync sync\` of that resource takes it over. Exit 0 whatever the report says.

Examples:
  trainsync status
  trainsync status --json | jq '.runs[] | {resource, status}'
  trainsync status --json | jq '.activeJobs'
  trainsync status --org north         # one organisation's runs, windows and schedules
  trainsync status --org all           # many: counts by state and those needing attention
  trainsync status --org all --json | jq -c '.organisations[] | select(.state != "ok")'
  trainsync status --org all --offset 200 --limit 100

With several organisations configured, runs, watermarks, quarantined records, schedules and
the sections below them are shown per organisation (all of them unless --org names some),
and each of those entries of --json carries its \`org\`. Above ${DETAIL_UP_TO} organisations the
text is a summary: how many are ok, running, failed, stale or never run, then the first 20
needing attention (failed, stale, unfinished windows, provisioning actions needing
attention, held plans); --json still gives every organisation, written as it is read.`,
    )
    .action(async (options: StatusCliOptions, command: Command) => {
      const config = deps.loadConfig();
      const requested = requestedOrgs(command);
      // A report reads only: every organisation unless --org names some.
      const chosen = (requested.length === 0 ? config.orgs : selectOrgs(config, requested)).map((org) => org.slug);
      const offset = options.offset ?? 0;
      const orgs = chosen.slice(offset, options.limit === undefined ? undefined : offset + options.limit);
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, readOnly: true });
      try {
        const single = orgs.length === 1 && orgs[0] === DEFAULT_ORG && config.orgs.length === 1;
        const page = { from: offset, of: chosen.length };
        const staleAfterMs = options.staleAfter * 3_600_000;
        if (single || (!options.json && orgs.length <= DETAIL_UP_TO)) {
          const report = await collectStatus(app, sections, orgs);
          process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
        } else if (options.json) {
          await streamStatusJson(app, sections, orgs, { staleAfterMs, page }, process.stdout);
        } else {
          process.stdout.write(await renderSummary(app, orgs, { staleAfterMs, page }));
        }
      } finally {
        await app.close();
      }
    });
}

