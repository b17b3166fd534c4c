import Table from 'cli-table3';
import type { Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import { requirePlatform } from '../config.ts';
import { syncResources, type SyncResource } from '../sync/resources.ts';
import { syncSummarySchema } from '../sync/summary.ts';
import { runSync, SyncConflictError, SyncInterruptedError } from '../sync/run-and-wait.ts';
import { syncPayloadSchema, type SyncPayload } from '../sync/sync-payload.ts';
import type { JobOutcome } from '../queue/wait-for-jobs.ts';
import { withWaitOptions } from '../queue/job-queue.ts';
import { parseDay } from '../sync/results/days.ts';
import type { CommandDeps } from './deps.ts';
import { createProgressDisplay } from './progress-display.ts';

/** Exit statuses of `sync` (README, "Operations"). */
export const SYNC_EXIT = { ok: 0, failed: 1, refused: 2, incomplete: 3, interrupted: 130 } as const;

export function registerSyncCommand(program: Command, deps: CommandDeps): void {
  const known = syncResources(deps.jobs);
  program
    .command('sync')
    .description('Enqueue sync jobs and wait for them, printing a summary per resource. Processes the jobs itself when no worker is connected.')
    .argument('[resources...]', `any of ${known.join(', ')}, or all`, ['all'])
    .option('--since <YYYY-MM-DD>', 'results: backfill from this date (inclusive); leaves the watermark alone')
    .option('--until <YYYY-MM-DD>', 'results: backfill up to this date (inclusive); default today')
    .option('--full', 'results: read every result and mark those the platform no longer returns as removed')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      `
Examples:
  trainsync sync                       # everything; results incrementally from the watermark
  trainsync sync results --since 2024-01-01 --until 2024-06-30
  trainsync sync results --full        # re-read all results, mark vanished ones removed
Exit status: 0 every run succeeded; 1 a job failed (its reason is printed); 2 refused, nothing
enqueued (bad options, or the same resource is already syncing with other options); 3 a run
ended incomplete (some windows could not be read to the end; the next run reads them again);
130 interrupted (Ctrl-C: jobs this process ran go back to the queue and resume later).`,
    )
    .action(async (resourceArgs: string[], options: { since?: string; until?: string; full?: boolean; json?: boolean }) => {
      const resources = parseResources(resourceArgs, known);
      const payload = parseSyncOptions(options);
      const config = deps.loadConfig();
      // Before anything touches Postgres or Redis: the jobs cannot run without the platform.
      requirePlatform(config);
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
      const interrupt = new AbortController();
      const onSigint = (): void => interrupt.abort();
      process.once('SIGINT', onSigint);
      let exitCode: number = SYNC_EXIT.ok;
      try {
        const display = createProgressDisplay();
        let outcomes: JobOutcome[];
        try {
          // A job making no progress for a while gets one line saying what it waits for.
          const queue = withWaitOptions(app.queue, { onStall: (line) => process.stderr.write(`${line}\n`) });
          outcomes = await runSync({ queue, log: app.log }, resources, payload, { onProgress: (jobId, progress) => display.update(jobId, progress), signal: interrupt.signal });
        } finally {
          display.stop();
        }
        process.stdout.write(options.json ? `${JSON.stringify(outcomes, null, 2)}\n` : renderSummary(outcomes));
        exitCode = syncExitCode(outcomes);
      } catch (error) {
        if (!(error instanceof SyncConflictError || error instanceof SyncInterruptedError)) throw error;
        process.stderr.write(`trainsync: ${error.message}\n`);
        exitCode = error instanceof SyncConflictError ? SYNC_EXIT.refused : SYNC_EXIT.interrupted;
      } finally {
        process.off('SIGINT', onSigint);
        await app.close();
      }
      process.exitCode = exitCode;
    });
}

function parseResources(args: string[], known: readonly SyncResource[]): SyncResource[] {
  const wanted = new Set<SyncResource>();
  for (const arg of args) {
    if (arg === 'all') known.forEach((r) => wanted.add(r));
    else if (known.includes(arg)) wanted.add(arg);
    else throw new Error(`Unknown resource "${arg}": use ${known.join(', ')} or all.`);
  }
  return known.filter((r) => wanted.has(r));
}

function parseSyncOptions(options: { since?: string; until?: string; full?: boolean }): SyncPayload {
  for (const [flag, value] of [['--since', options.since], ['--until', options.until]] as const) {
    if (value === undefined) continue;
    try {
      parseDay(value);
    } catch {
      throw new Error(`${flag} ${value}: expected a date as YYYY-MM-DD, e.g. ${flag} 2024-01-31`);
    }
  }
  if (options.since && options.until && options.since > options.until) {
    throw new Error(`--since ${options.since} is after --until ${options.until}: swap them.`);
  }
  if (options.full && (options.since || options.until)) {
    throw new Error('--full reads every result; it cannot be combined with --since/--until.');
  }
  return syncPayloadSchema.parse({ trigger: 'cli', since: options.since, until: options.until, full: options.full ?? false });
}

/** 1 when a job failed, else 3 when a run ended incomplete, else 0. */
export function syncExitCode(outcomes: readonly JobOutcome[]): number {
  if (outcomes.some((outcome) => outcome.status === 'failed')) return SYNC_EXIT.failed;
  const incomplete = outcomes.some((outcome) => syncSummarySchema.safeParse(outcome.result).data?.status === 'incomplete');
  return incomplete ? SYNC_EXIT.incomplete : SYNC_EXIT.ok;
}

export function renderSummary(outcomes: readonly JobOutcome[]): string {
  const table = new Table({
    head: ['resource', 'status', 'pages', 'requests', 'inserted', 'updated', 'unchanged', 'quarantined', 'removed', 'seconds', 'note'],
    style: { head: [], border: [], compact: true },
  });
  for (const outcome of outcomes) {
    const summary = syncSummarySchema.safeParse(outcome.result);
    if (outcome.status === 'completed' && summary.success) {
      const s = summary.data;
      table.push([s.resource, s.status === 'incomplete' ? 'INCOMPLETE' : 'ok', s.pages, s.requests ?? '', s.inserted, s.updated, s.unchanged, s.quarantined, s.removed, (s.durationMs / 1000).toFixed(1), s.note ?? '']);
    } else {
      table.push([outcome.name.replace(/^sync-/, ''), outcome.status === 'failed' ? 'FAILED' : 'ok', '', '', '', '', '', '', '', '', 'see below']);
    }
  }
  const failures = outcomes.filter((o) => o.status === 'failed').map((o) => `${o.name} failed: ${o.error ?? 'unknown reason'}`);
  return `${[table.toString(), ...failures].join('\n')}\n`;
}
