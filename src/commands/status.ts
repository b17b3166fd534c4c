import Table from 'cli-table3';
import type { Command } from 'commander';
import { createApp, type App } from '../app.ts';
import { QUEUE_NAMES } from '../queue/names.ts';
import { lastRuns, listWatermarks, quarantineCounts } from '../warehouse/sync-state.ts';
import type { CommandDeps } from './deps.ts';

/** Extra sections other parts add to `status` (provisioning adds actions needing attention). */
export type StatusSection = (app: App) => Promise<{ title: string; rows: Array<Record<string, unknown>> }>;

export function registerStatusCommand(program: Command, deps: CommandDeps, sections: readonly StatusSection[] = []): void {
  program
    .command('status')
    .description('Show queue counts, the last run per resource, watermarks, quarantined records and failed jobs.')
    .option('--json', 'print everything as one JSON document')
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
  runs: Awaited<ReturnType<typeof lastRuns>>;
  watermarks: Array<{ resource: string; value: string; updatedAt: Date }>;
  quarantine: Awaited<ReturnType<typeof quarantineCounts>>;
  failedJobs: Array<{ queue: string; id: string; name: string; failedReason: string; attemptsMade: number; finishedAt: string | null }>;
  schedules: Array<{ id: string; pattern: string | null; next: string | null }>;
  sections: Array<{ title: string; rows: Array<Record<string, unknown>> }>;
}

export async function collectStatus(app: App, sections: readonly StatusSection[] = []): Promise<StatusReport> {
  const queues = await Promise.all(
    QUEUE_NAMES.map(async (name) => {
      const queue = app.queue.queues[name];
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'waiting-children');
      return { queue: name, workers: await queue.getWorkersCount(), counts };
    }),
  );
  const failedJobs = (
    await Promise.all(
      QUEUE_NAMES.map(async (name) =>
        (await app.queue.queues[name].getFailed(0, 19)).map((job) => ({
          queue: name,
          id: String(job.id),
          name: job.name,
          failedReason: job.failedReason,
          attemptsMade: job.attemptsMade,
          finishedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
        })),
      ),
    )
  ).flat();
  const schedules = (await app.queue.queues.sync.getJobSchedulers()).map((s) => ({
    id: s.key,
    pattern: s.pattern ?? null,
    next: s.next ? new Date(s.next).toISOString() : null,
  }));
  return {
    queues,
    runs: await lastRuns(app.db),
    watermarks: await listWatermarks(app.db),
    quarantine: await quarantineCounts(app.db),
    failedJobs,
    schedules,
    sections: await Promise.all(sections.map((section) => section(app))),
  };
}

function table(head: string[], rows: unknown[][]): string {
  const t = new Table({ head, style: { head: [], border: [], compact: true } });
  for (const row of rows) t.push(row.map((cell) => (cell instanceof Date ? cell.toISOString() : cell === null || cell === undefined ? '' : String(cell))));
  return t.toString();
}

export function renderStatus(report: StatusReport): string {
  const parts = [
    'Queues',
    table(['queue', 'workers', 'waiting', 'active', 'delayed', 'failed', 'completed'], report.queues.map((q) => [q.queue, q.workers, q.counts.waiting, q.counts.active, q.counts.delayed, q.counts.failed, q.counts.completed])),
    'Last run per resource',
    report.runs.length === 0
      ? '(no runs yet: try `trainsync sync`)'
      : table(
          ['resource', 'status', 'mode', 'started', 'finished', 'pages', 'ins', 'upd', 'same', 'quar', 'rem', 'note / error'],
          report.runs.map((r) => [r.resource, r.status, r.mode, r.startedAt, r.finishedAt, r.pages, r.inserted, r.updated, r.unchanged, r.quarantined, r.removed, r.error ?? r.note]),
        ),
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
