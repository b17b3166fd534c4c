import { DEFAULT_ORG } from '../lib/orgs-file.ts';
import type { Command } from 'commander';
import { createApp, type App } from '../runtime/app.ts';
import { QUEUE_NAMES } from '../queue/names.ts';
import type { ActiveHolder } from '../queue/orphans.ts';
import { lastRuns, listWatermarks, quarantineCounts, type RunSummary } from '../sync/sync-state.ts';
import { fitTable } from './fit-table.ts';
import type { CommandDeps } from './deps.ts';

/** Extra sections other parts add to `status` (provisioning adds actions needing attention). */
/** One wing's part of `status`, for one organisation (its rows only). */
export type StatusSection = (app: App, org: string) => Promise<{ title: string; rows: Array<Record<string, unknown>> }>;

export function registerStatusCommand(program: Command, deps: CommandDeps, sections: readonly StatusSection[] = []): void {
  program
    .command('status')
    .description('Show queue counts, the last run per resource, watermarks, quarantined records and failed jobs.')
    .option('--json', 'print everything as one JSON document')
    .addHelpText(
      'after',
      `
Reads only: a missing or unmigrated database is refused with "run \`trainsync migrate\` first"
(exit 2) and nothing is created. A run still going reads "running (worker HOST:PID)"; one
whose process is gone reads "orphaned": \`trainsync cancel RESOURCE\` removes it, and the
next \`trainsync sync\` of that resource takes it over.

Examples:
  trainsync status
  trainsync status --json | jq '.runs[] | {resource, status}'
  trainsync status --json | jq '.activeJobs'`,
    )
    .action(async (options: { json?: boolean }) => {
      const config = deps.loadConfig();
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, readOnly: true });
      try {
        const report = await collectStatus(app, sections);
        process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
      } finally {
        await app.close();
      }
    });
}

export interface StatusReport {
  queues: Array<{ queue: string; workers: number; counts: Record<string, number> }>;
  runs: Array<Omit<RunSummary, 'status'> & { status: string }>;
  watermarks: Array<{ resource: string; value: string; updatedAt: Date }>;
  quarantine: Awaited<ReturnType<typeof quarantineCounts>>;
  failedJobs: Array<{ queue: string; id: string; name: string; failedReason: string; attemptsMade: number; finishedAt: string | null }>;
  /** Jobs taken by a worker: `running (worker X)`, or `orphaned` when that worker is gone. */
  activeJobs: Array<{ queue: string; id: string; name: string; state: string; worker: string | null }>;
  schedules: Array<{ id: string; pattern: string | null; next: string | null }>;
  sections: Array<{ title: string; rows: Array<Record<string, unknown>> }>;
}

export async function collectStatus(app: App, sections: readonly StatusSection[] = []): Promise<StatusReport> {
  const queues = await Promise.all(QUEUE_NAMES.map(async (name) => ({ queue: name, workers: await app.queue.workers(name), counts: await app.queue.counts(name) })));
  const failedJobs = (await Promise.all(QUEUE_NAMES.map(async (name) => (await app.queue.failedJobs(name, 20)).map((job) => ({ queue: name, ...job }))))).flat();
  const activeJobs = (
    await Promise.all(
      QUEUE_NAMES.map(async (name) =>
        (await app.queue.activeJobs(name, 50)).flatMap((job) => (job.holder ? [{ queue: name, id: job.id, name: job.name, state: holderWord(job.holder), worker: job.holder.worker ?? null }] : [])),
      ),
    )
  ).flat();
  const schedules = await app.queue.schedules();
  const runs = (await lastRuns(app.db)).map((run) => {
    if (run.status !== 'running') return run;
    const job = activeJobs.find((j) => j.id === run.jobId);
    // A run left running whose job no worker holds: the job waits to resume, or is gone.
    return { ...run, status: job?.state ?? 'running (queued to resume)' };
  });
  return {
    queues,
    runs,
    activeJobs,
    watermarks: await listWatermarks(app.db),
    quarantine: await quarantineCounts(app.db),
    failedJobs,
    schedules,
    sections: await Promise.all(sections.map((section) => section(app, DEFAULT_ORG))),
  };
}

/** HH:MM (UTC) for today, else the day. */
function shortTime(at: Date): string {
  const iso = at.toISOString();
  return iso.slice(0, 10) === new Date().toISOString().slice(0, 10) ? iso.slice(11, 16) : iso.slice(0, 10);
}

function holderWord(holder: ActiveHolder): string {
  return holder.orphaned ? `orphaned (worker ${holder.worker ?? 'unknown'} gone)` : `running (worker ${holder.worker ?? 'unknown'})`;
}

/** Tables at most 100 columns wide: the last column (notes, reasons) wraps. */
function table(head: string[], rows: unknown[][], flex?: number[]): string {
  return fitTable(head, rows, flex ? { flex } : {});
}

export function renderStatus(report: StatusReport): string {
  const parts = [
    'Queues',
    table(['queue', 'workers', 'waiting', 'active', 'delayed', 'failed', 'completed'], report.queues.map((q) => [q.queue, q.workers, q.counts.waiting, q.counts.active, q.counts.delayed, q.counts.failed, q.counts.completed])),
    'Last run per resource',
    report.runs.length === 0
      ? '(no runs yet: try `trainsync sync`)'
      : table(
          // Narrow: the mode, start and exact times are in --json.
          ['resource', 'status', 'ended', 'pages', 'req', 'new', 'upd', 'same', 'quar', 'rem', 'note'],
          report.runs.map((r) => [r.resource, r.status === 'succeeded' ? 'ok' : r.status, shortTime(r.finishedAt ?? r.startedAt), r.pages, r.requests, r.inserted, r.updated, r.unchanged, r.quarantined, r.removed, r.error ?? r.note]),
          [1, 10],
        ),
    'Jobs taken by a worker',
    report.activeJobs.length === 0 ? '(none)' : table(['queue', 'job', 'id', 'state'], report.activeJobs.map((j) => [j.queue, j.name, j.id, j.state])),
    'Watermarks',
    report.watermarks.length === 0 ? '(none)' : table(['resource', 'value', 'updated'], report.watermarks.map((w) => [w.resource, w.value, w.updatedAt])),
    'Quarantined records (see trainsync.quarantine)',
    report.quarantine.length === 0 ? '(none)' : table(['resource', 'records', 'last seen'], report.quarantine.map((q) => [q.resource, q.count, q.lastSeenAt])),
    'Failed jobs (kept for inspection)',
    report.failedJobs.length === 0 ? '(none)' : table(['queue', 'job', 'id', 'attempts', 'finished', 'reason'], report.failedJobs.map((j) => [j.queue, j.name, j.id, j.attemptsMade, j.finishedAt, j.failedReason])),
    'Schedules (UTC)',
    report.schedules.length === 0 ? '(none registered: start `trainsync worker`)' : table(['id', 'cron', 'next'], report.schedules.map((s) => [s.id, s.pattern, s.next])),
  ];
  for (const section of report.sections) {
    parts.push(section.title);
    const first = section.rows[0];
    parts.push(first ? table(Object.keys(first), section.rows.map((row) => Object.values(row))) : '(none)');
  }
  return `${parts.join('\n')}\n`;
}
