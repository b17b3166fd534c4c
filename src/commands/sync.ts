import type { Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import { loadHttpClient } from '../platform/http.ts';
import { cancelRunsOfJob } from '../sync/runs-store.ts';
import { orgOf, requirePlatform } from '../config.ts';
import { ranElsewhere, type RanElsewhere } from '../queue/ran-by.ts';
import { syncResources, type SyncResource } from '../sync/catalog-resources.ts';
import { syncSummarySchema } from '../sync/summary.ts';
import { runSyncOfOrgs, SyncConflictError, SyncInterruptedError, type SyncOutcome } from '../sync/run-and-wait.ts';
import { syncPayloadSchema, type SyncPayload } from '../sync/sync-payload.ts';
import type { JobOutcome } from '../queue/wait-for-jobs.ts';
import { withWaitOptions, type JobQueue } from '../queue/job-queue.ts';
import { parseDay } from '../sync/results/days.ts';
import type { CommandDeps } from './options/deps.ts';
import { EXIT, exitWith, isRefusedKey, isUnreachablePlatform, UsageError, type ExitCode } from './options/exit-codes.ts';
import { fitTable } from './render/fit-table.ts';
import { requestedOrgs, selectOrgs } from './options/org-option.ts';
import { createProgressDisplay } from './render/progress-display.ts';
import { fitText, stderrTerminal } from './render/terminal.ts';

/** Exit statuses of `sync` (docs/reference.md, "Exit codes"). */
export const SYNC_EXIT = EXIT;

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
  trainsync sync --org north --org south   # two organisations' syncs, side by side
With several organisations configured, name them with --org (repeat it, or --org all);
each line of the progress and the summary then starts with the organisation.
For sync: 1 a job failed (its reason is printed last); 2 also when the platform refuses the
API key (the summary marks the resources "key refused"), when nothing ever answered at its URL
("not reached"), when a worker ran the jobs with another platform, key or database ("NOT
OURS"), or the same resource is already
syncing with other options (a sync whose process is gone is taken over instead; see
\`trainsync cancel\`); 3 some windows could not be read to the end (the next run reads them
again); 130 Ctrl-C: jobs this process ran go back to the queue and resume later.`,
    )
    .action(async (resourceArgs: string[], options: { since?: string; until?: string; full?: boolean; json?: boolean }, command: Command) => {
      const resources = parseResources(resourceArgs, known);
      const payload = parseSyncOptions(options);
      const config = deps.loadConfig();
      const orgs = selectOrgs(config, requestedOrgs(command));
      // Before anything touches Postgres or Redis: the jobs cannot run without the platform.
      for (const org of orgs) requirePlatform(config, org);
      // Lines name their organisation only when there are several: one organisation's output is unchanged.
      const labelled = orgs.length > 1;
      const log = deps.createLogger(config);
      // The jobs call the platform: its HTTP client loads beside the connections and migrations, not after the first grant.
      loadHttpClient().catch(() => undefined);
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
      const interrupt = new AbortController();
      const onSigint = (): void => interrupt.abort();
      process.once('SIGINT', onSigint);
      try {
        const display = createProgressDisplay({ log: app.log });
        let outcomes: SyncOutcome[];
        let elsewhere: RanElsewhere[] = [];
        let foreign = new Set<string>();
        const jobOrgs = new Map<string, string>();
        const lineOf = (jobId: string, progress: unknown): unknown => {
          const org = jobOrgs.get(jobId);
          if (!labelled || org === undefined || typeof progress !== 'object' || progress === null) return progress;
          const resource = (progress as { resource?: unknown }).resource;
          return typeof resource === 'string' ? { ...progress, resource: `${org} ${resource}` } : progress;
        };
        try {
          // A job making no progress for a while gets one line saying what it waits for (a log record off a terminal).
          const queue = withWaitOptions(app.queue, { onStall: (line) => (stderrTerminal.isTty ? stderrTerminal.writeLine(line) : app.log.warn(line)) });
          outcomes = await runSyncOfOrgs(
            { orgs: orgs.map((org) => org.slug), queue: withJobOrgs(queue, jobOrgs), log: app.log, cancelRuns: (org, jobId, reason) => cancelRunsOfJob(app.scopes.scope(org), jobId, reason) },
            resources,
            payload,
            { onProgress: (jobId, progress) => display.update(jobId, lineOf(jobId, progress)), signal: interrupt.signal },
          );
          // A worker process may have run the jobs: with other settings, its result is not this command's.
          elsewhere = await ranElsewhere(app.queue, config, outcomes, (slug) => orgOf(config, slug));
          foreign = new Set(elsewhere.filter((group) => (group.differences ?? []).length > 0).flatMap((group) => group.jobIds));
          for (const outcome of outcomes) {
            // The last progress may predate the last page: the line ends with the run's own totals.
            const summary = syncSummarySchema.safeParse(outcome.result);
            if (summary.success) display.update(outcome.jobId, lineOf(outcome.jobId, { resource: summary.data.resource, pages: summary.data.pages, rows: summary.data.inserted + summary.data.updated + summary.data.unchanged }));
            display.finish(outcome.jobId, foreign.has(outcome.jobId) ? 'NOT OURS' : outcomeWord(outcome));
          }
        } finally {
          display.stop();
        }
        // One organisation: the output of a single-organisation deployment, as before (no `org`).
        const shown = labelled ? outcomes : outcomes.map(({ org: _org, ...outcome }) => outcome);
        // On a terminal, who ran the jobs when it was not this process (--json has `processedBy`).
        const ranBy = process.stdout.isTTY === true ? ranByLines(elsewhere, outcomes, labelled) : [];
        process.stdout.write(options.json ? `${JSON.stringify(shown, null, 2)}\n` : renderSummary(outcomes, labelled, { foreign, ranBy }));
        const mismatch = settingsMismatchReason(elsewhere, outcomes, labelled);
        if (mismatch !== undefined) exitWith(SYNC_EXIT.refused, mismatch);
        else exitWith(syncExitCode(outcomes), syncExitReason(outcomes, labelled));
      } catch (error) {
        if (!(error instanceof SyncConflictError || error instanceof SyncInterruptedError)) throw error;
        exitWith(error instanceof SyncConflictError ? SYNC_EXIT.refused : SYNC_EXIT.interrupted, error.message);
      } finally {
        process.off('SIGINT', onSigint);
        await app.close();
      }
    });
}

function parseResources(args: string[], known: readonly SyncResource[]): SyncResource[] {
  const wanted = new Set<SyncResource>();
  for (const arg of args) {
    if (arg === 'all') known.forEach((r) => wanted.add(r));
    else if (known.includes(arg)) wanted.add(arg);
    else throw new UsageError(`unknown resource "${arg}": use ${known.join(', ')} or all`);
  }
  return known.filter((r) => wanted.has(r));
}

function parseSyncOptions(options: { since?: string; until?: string; full?: boolean }): SyncPayload {
  for (const [flag, value] of [['--since', options.since], ['--until', options.until]] as const) {
    if (value === undefined) continue;
    try {
      parseDay(value);
    } catch {
      throw new UsageError(`${flag} ${value}: expected a date that exists, as YYYY-MM-DD, e.g. ${flag} 2024-01-31`);
    }
  }
  if (options.since && options.until && options.since > options.until) {
    throw new UsageError(`--since ${options.since} is after --until ${options.until}: swap them`);
  }
  if (options.full && (options.since || options.until)) {
    throw new UsageError('--full reads every result; it cannot be combined with --since/--until');
  }
  return syncPayloadSchema.parse({ trigger: 'cli', since: options.since, until: options.until, full: options.full ?? false });
}

/** A job that failed because the platform refused the API key (the configuration's fault). */
const keyRefused = (outcome: JobOutcome): boolean => outcome.status === 'failed' && isRefusedKey(outcome.error ?? '');
/** A job that failed because nothing ever answered at the platform's URL (the configuration's fault too). */
const unreached = (outcome: JobOutcome): boolean => outcome.status === 'failed' && isUnreachablePlatform(outcome.error ?? '');
/** Said once, last: every job fails the same way. */
const configFault = (outcome: JobOutcome): boolean => keyRefused(outcome) || unreached(outcome);

/** 2 when the platform refused the API key or was not reached at all, else 1 when a job failed, else 3 when a run ended incomplete, else 0. */
export function syncExitCode(outcomes: readonly JobOutcome[]): ExitCode {
  if (outcomes.some(configFault)) return SYNC_EXIT.refused;
  if (outcomes.some((outcome) => outcome.status === 'failed')) return SYNC_EXIT.failed;
  const incomplete = outcomes.some((outcome) => syncSummarySchema.safeParse(outcome.result).data?.status === 'incomplete');
  return incomplete ? SYNC_EXIT.incomplete : SYNC_EXIT.ok;
}

/** The word a finished job's progress line ends with. */
function outcomeWord(outcome: JobOutcome): string {
  if (outcome.status === 'failed') return 'FAILED';
  return syncSummarySchema.safeParse(outcome.result).data?.status === 'incomplete' ? 'INCOMPLETE' : 'done';
}

/** The one line printed last when the exit code is not 0; `labelled` (several organisations): resources named with theirs. */
export function syncExitReason(outcomes: ReadonlyArray<JobOutcome & { org?: string }>, labelled = false): string | undefined {
  const named = (o: JobOutcome & { org?: string }): string => `${labelled && o.org ? `${o.org} ` : ''}${o.name.replace(/^sync-/, '')}`;
  // A refused key fails every job the same way: said once, here (the summary only marks them).
  const refused = outcomes.filter(keyRefused);
  if (refused.length > 0) return `the platform refused the API key, so ${refused.map(named).join(', ')} ${refused.length === 1 ? 'was' : 'were'} not synced: ${refused[0]!.error}`;
  // Likewise a URL where nothing answers: one line naming the setting, not one per job.
  const notReached = outcomes.filter(unreached);
  if (notReached.length > 0) return `${notReached[0]!.error} (${notReached.map(named).join(', ')} not synced)`;
  const failed = outcomes.filter((o) => o.status === 'failed');
  if (failed.length > 0) return `${failed.map(named).join(', ')} failed: ${failed[0]!.error ?? 'unknown reason'}`;
  const incomplete = outcomes.filter((o) => syncSummarySchema.safeParse(o.result).data?.status === 'incomplete').map(named);
  return incomplete.length > 0 ? `${incomplete.join(', ')} incomplete: some windows could not be read to the end; the next run reads them again` : undefined;
}

/**
 * The queue `runSync…` uses, noting which organisation each job it adds belongs to (for
 * labelling progress lines before the outcomes name it).
 */
function withJobOrgs(queue: JobQueue, jobOrgs: Map<string, string>): JobQueue {
  const add: JobQueue['add'] = async (name, payload, options) => {
    const job = await queue.add(name, payload, options);
    jobOrgs.set(job.id, options.org);
    return job;
  };
  return { ...queue, add };
}

/** Resource names of the jobs in `jobIds`, each with its organisation when `labelled`. */
function resourcesOf(outcomes: ReadonlyArray<JobOutcome & { org?: string }>, jobIds: readonly string[], labelled: boolean): string {
  return outcomes
    .filter((o) => jobIds.includes(o.jobId))
    .map((o) => `${labelled && o.org ? `${o.org} ` : ''}${o.name.replace(/^sync-/, '')}`)
    .join(', ');
}

/** "run by worker host:pid" lines, one per worker and organisation, for the summary on a terminal. */
export function ranByLines(elsewhere: readonly RanElsewhere[], outcomes: ReadonlyArray<JobOutcome & { org?: string }>, labelled = false): string[] {
  return elsewhere.map((group) => {
    const settings = group.differences === undefined ? ' (it published no settings to compare)' : group.differences.length === 0 ? ', with the same settings as this command' : ', with other settings (below)';
    return `${resourcesOf(outcomes, group.jobIds, labelled)}: run by worker ${group.worker}${settings}`;
  });
}

/**
 * The last line when a worker with other settings (platform, API key, database) ran this
 * command's jobs: which differ and what to do; undefined when none did.
 */
export function settingsMismatchReason(elsewhere: readonly RanElsewhere[], outcomes: ReadonlyArray<JobOutcome & { org?: string }>, labelled = false): string | undefined {
  const differing = elsewhere.filter((group) => (group.differences ?? []).length > 0);
  if (differing.length === 0) return undefined;
  const first = differing[0]!;
  const all = resourcesOf(outcomes, differing.flatMap((group) => group.jobIds), labelled);
  return (
    `worker ${first.worker} ran ${all} with settings other than this command's: ${first.differences!.join('; ')}. ` +
    'Its result is not reported as this command\'s: make TRAINSYNC_API_URL, TRAINSYNC_API_KEY (or the orgs file) and DATABASE_URL the same here and on the worker, or stop that worker to run the sync here'
  );
}

/** The summary table; `labelled` (several organisations): each row's resource starts with its organisation. */
export function renderSummary(
  outcomes: ReadonlyArray<JobOutcome & { org?: string }>,
  labelled = false,
  extra: { foreign?: ReadonlySet<string>; ranBy?: readonly string[] } = {},
): string {
  const foreign = extra.foreign ?? new Set<string>();
  const rows: unknown[][] = [];
  const notes: string[] = [];
  const table = { push: (row: unknown[]): void => void rows.push(row) };
  for (const outcome of outcomes) {
    const summary = syncSummarySchema.safeParse(outcome.result);
    if (foreign.has(outcome.jobId)) {
      // Another worker's result, with other settings: not this command's to report as its own.
      const resource = outcome.name.replace(/^sync-/, '');
      table.push([labelled ? `${outcome.org} ${resource}` : resource, 'NOT OURS', '', '', '', '', '', '', '', '', 'worker settings differ']);
    } else if (outcome.status === 'completed' && summary.success) {
      const s = summary.data;
      // A long note reads better as a sentence under the table than wrapped in a narrow column.
      const long = (s.note ?? '').length > 24;
      if (long) notes.push(`${labelled ? `${outcome.org} ` : ''}${s.resource}: ${s.note}`);
      table.push([labelled ? `${outcome.org} ${s.resource}` : s.resource, s.status === 'incomplete' ? 'INCOMPLETE' : 'ok', s.pages, s.requests ?? '', s.inserted, s.updated, s.unchanged, s.quarantined, s.removed, (s.durationMs / 1000).toFixed(1), long ? 'see below' : (s.note ?? '')]);
    } else {
      const resource = outcome.name.replace(/^sync-/, '');
      table.push([labelled ? `${outcome.org} ${resource}` : resource, outcome.status === 'failed' ? 'FAILED' : 'ok', '', '', '', '', '', '', '', '', keyRefused(outcome) ? 'key refused' : unreached(outcome) ? 'not reached' : 'see below']);
    }
  }
  const failures = outcomes.filter((o) => o.status === 'failed' && !configFault(o) && !foreign.has(o.jobId)).map((o) => `${labelled ? `${o.org} ` : ''}${o.name} failed: ${o.error ?? 'unknown reason'}`);
  // Short heads, as in `status`: the table fits 80 columns (--json has the full names).
  const head = ['resource', 'status', 'pages', 'req', 'new', 'upd', 'same', 'quar', 'rem', 'sec', 'note'];
  // No note at all: no note column (it would only cost the width).
  const withNotes = rows.some((row) => row.at(-1) !== '');
  const drawn = withNotes ? fitTable(head, rows) : fitTable(head.slice(0, -1), rows.map((row) => row.slice(0, -1)));
  // Sentences wrap when the width is known (a terminal, COLUMNS): a log file keeps each on one line, for grep.
  return fitText([drawn, ...notes, ...failures, ...(extra.ranBy ?? [])].join('\n'));
}
