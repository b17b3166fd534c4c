import { InvalidArgumentError, type Command } from 'commander';
import { feedCheckExitCode, feedCheckReport, formatFeedCheck } from './render/feed-check-report.ts';
import { tableWidth } from './render/fit-table.ts';
import { fitText } from './render/terminal.ts';
import { readFeedSummary } from '../provisioning/feed/read.ts';
import { feedReadProgress } from './render/feed-progress.ts';
import { limitHeapGrowth } from '../runtime/heap-growth.ts';
import { addFeedOptions, FEED_PROFILE_HELP, feedReadingOrExit, type FeedCliOptions } from './options/feed-options.ts';

interface FeedCheckCliOptions extends FeedCliOptions {
  rows: number;
  json?: boolean;
}

function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number, e.g. 20');
  return n;
}

/**
 * `trainsync feed check FILE`: how a feed reads (counts, row errors, the first rows as
 * mapped). Reads the file and the profile and nothing else: no configuration, no
 * database, no Redis, no platform, so it works on a laptop with no services.
 */
export function registerFeedCommand(program: Command): void {
  const feed = program.command('feed').description('Work with HR feeds without touching anything (see `feed check`).');
  const check = feed
    .command('check')
    .description('Show how an HR feed reads: counts, row errors (file, line, field, fix) and the first rows as mapped. Touches nothing.');
  addFeedOptions(check)
    .option('--rows <n>', 'how many rows to show as mapped', count, 10)
    .option('--json', 'print the report as one JSON document')
    .addHelpText(
      'after',
      `
Reads the file exactly as \`provision\` and \`load-feed\` would, with the same profile and
options, and reports what it found. Needs no configuration and no running service.
${FEED_PROFILE_HELP}

Exit status: 0 every row reads; 1 some rows are rejected (listed); 2 the file cannot be
read (wrong header, bad bytes, a quote never closed) or the profile is invalid.

Examples:
  trainsync feed check export.csv
  trainsync feed check workday.csv --profile examples/workday-profile.json
  trainsync feed check export.csv --map "email=Work Email" --rows 3 --json`,
    )
    .action(async (file: string, options: FeedCheckCliOptions) => {
      const reading = await feedReadingOrExit(file, options);
      if (reading === undefined) return;
      // Only the rows shown are held, and a terminal sees the read go: a 300,000-row feed takes seconds.
      // As in every process that builds the app: without it V8 let the garbage of the read reach
      // 400 MB of RSS for a live heap of 60 MB (docs/benchmarks.md, "A large HR feed").
      limitHeapGrowth();
      const progress = await feedReadProgress(file);
      const result = await readFeedSummary(file, { ...reading.options, onProgress: progress.onProgress }, options.rows).finally(() => progress.stop());
      const report = feedCheckReport(result, { file, profile: options.profile, rows: options.rows });
      process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : fitText(formatFeedCheck(report, { width: tableWidth() })));
      process.exitCode = feedCheckExitCode(report);
    });
}
