import { DEFAULT_ORG } from '../lib/orgs-file.ts';
import type { Command } from 'commander';
import { createApp, type App } from '../runtime/app.ts';
import { QUEUE_NAMES } from '../queue/names.ts';
import type { ActiveHolder } from '../queue/orphans.ts';
import { lastRuns, type RunSummary } from '../sync/runs-store.ts';
import { listWatermarks, quarantineCounts } from '../sync/sync-state.ts';
import { fitTable } from './fit-table.ts';
import type { CommandDeps } from './deps.ts';
import { requestedOrgs, selectOrgs } from './org-option.ts';

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
  trainsync status --json | jq '.activeJobs'
  trainsync status --org north         # one organisation's runs, windows and schedules

With several organisations configured, runs, watermarks, quarantined records, schedules and
the sections below them are shown per organisation (all of them unless --org names some),
and each of those entries of --json carries its \`org\`.`,
    )
    .action(async (options: { json?: boolean }, command: Command) => {
      const config = deps.loadConfig();
      const requested = requestedOrgs(command);
      // A report reads only: every organisation unless --org names some.
      const orgs = (requested.length === 0 ? config.orgs : selectOrgs(config, requested)).map((org) => org.slug);
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, readOnly: true });
      try {
        const report = await collectStatus(app, sections, orgs);
        process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
      } finally {
        await app.close();
      }
    });
}

/** Set on the per-organisation entries when the report covers an organisation other than `default` alone. */
type OfOrg = { org?: string };

export interface StatusReport {
  queues: Array<{ queue: string; workers: number; counts: Record<string, number> }>;
  runs: Array<Omit<RunSummary, 'status'> & { status: string } & OfOrg>;
  watermarks: Array<{ resource: string; value: string; updatedAt: Date } & OfOrg>;
  quarantine: Array<Awaited<ReturnType<typeof quarantineCounts>>[number] & OfOrg>;
  failedJobs: Array<{ queue: string; id: string; name: string; failedReason: string; attemptsMade: number; finishedAt: string | null }>;
  /** Jobs taken by a worker: `running (worker X)`, or `orphaned` when that worker is gone. */
  activeJobs: Array<{ queue: string; id: string; name: string; state: string; worker: string | null }>;
  schedules: Array<{ id: string; pattern: string | null; next: string | null } & OfOrg>;
  sections: Array<{ title: string; rows: Array<Record<string, unknown>> } & OfOrg>;
  /** The organisations reported, in configuration order, when they are not `default` alone. */
  orgs?: string[];
}

/**
 * The report for `orgs` (default: every configured organisation). Queues, jobs taken and
 * failed jobs are the deployment's; runs, watermarks, quarantine, schedules and sections
 * are per organisation, each entry carrying its `org` unless the report is of `default`
 * alone (a single-organisation deployment's report is unchanged).
 */
export async function collectStatus(app: App, sections: readonly StatusSection[] = [], orgs: readonly string[] = app.config.orgs.map((org) => org.slug)): Promise<StatusReport> {
  const queues = await Promise.all(QUEUE_NAMES.map(async (name) => ({ queue: name, workers: await app.queue.workers(name), counts: await app.queue.counts(name) })));
  const failedJobs = (await Promise.all(QUEUE_NAMES.map(async (name) => (await app.queue.failedJobs(name, 20)).map((job) => ({ queue: name, ...job }))))).flat();
  const activeJobs = (
    await Promise.all(
      QUEUE_NAMES.map(async (name) =>
        (await app.queue.activeJobs(name, 50)).flatMap((job) => (job.holder ? [{ queue: name, id: job.id, name: job.name, state: holderWord(job.holder), worker: job.holder.worker ?? null }] : [])),
      ),
    )
  ).flat();
  const slugs = app.config.orgs.map((org) => org.slug);
  const allSchedules = await app.queue.schedules();
  const labelled = !(orgs.length === 1 && orgs[0] === DEFAULT_ORG && slugs.length === 1);
  const tag = <T extends object>(org: string, entries: T[]): Array<T & OfOrg> => (labelled ? entries.map((entry) => ({ ...entry, org })) : entries);
  const perOrg = await Promise.all(
    orgs.map(async (org) => {
      const runs = (await lastRuns(app.scopes.scope(org).db, org)).map((run) => {
        if (run.status !== 'running') return run;
        const job = activeJobs.find((j) => j.id === run.jobId);
        // A run left running whose job no worker holds: the job waits to resume, or is gone.
        return { ...run, status: job?.state ?? 'running (queued to resume)' };
      });
      return {
        runs: tag(org, runs),
        watermarks: tag(org, await listWatermarks(app.scopes.scope(org).db, org)),
        quarantine: tag(org, await quarantineCounts(app.scopes.scope(org).db, org)),
        schedules: tag(org, allSchedules.filter((schedule) => scheduleOrg(schedule.id, slugs) === org)),
        sections: tag(org, await Promise.all(sections.map((section) => section(app, org)))),
      };
    }),
  );
  return {
    queues,
    runs: perOrg.flatMap((o) => o.runs),
    activeJobs,
    watermarks: perOrg.flatMap((o) => o.watermarks),
    quarantine: perOrg.flatMap((o) => o.quarantine),
    failedJobs,
    schedules: perOrg.flatMap((o) => o.schedules),
    sections: perOrg.flatMap((o) => o.sections),
    ...(labelled ? { orgs: [...orgs] } : {}),
  };
}

/** The organisation a scheduler id belongs to (`<org>.<job>`, or the bare job name for `default`; see orgScoped). */
function scheduleOrg(id: string, slugs: readonly string[]): string {
  const dot = id.indexOf('.');
  const prefix = dot > 0 ? id.slice(0, dot) : undefined;
  return prefix !== undefined && slugs.includes(prefix) ? prefix : DEFAULT_ORG;
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
  const queues = ['Queues', table(['queue', 'workers', 'waiting', 'active', 'delayed', 'failed', 'completed'], report.queues.map((q) => [q.queue, q.workers, q.counts.waiting, q.counts.active, q.counts.delayed, q.counts.failed, q.counts.completed]))];
  const taken = ['Jobs taken by a worker', report.activeJobs.length === 0 ? '(none)' : table(['queue', 'job', 'id', 'state'], report.activeJobs.map((j) => [j.queue, j.name, j.id, j.state]))];
  const failed = [
    'Failed jobs (kept for inspection)',
    report.failedJobs.length === 0 ? '(none)' : table(['queue', 'job', 'id', 'attempts', 'finished', 'reason'], report.failedJobs.map((j) => [j.queue, j.name, j.id, j.attemptsMade, j.finishedAt, j.failedReason])),
  ];
  let parts: string[];
  if (report.orgs === undefined) {
    // `default` alone: the report as a single-organisation deployment always read it.
    const org = orgParts(report, () => true);
    parts = [...queues, ...org.runs, ...taken, ...org.watermarks, ...org.quarantine, ...failed, ...org.schedules, ...org.sections];
  } else {
    // Several: the deployment's queues and jobs, then a block per organisation.
    parts = [...queues, ...taken, ...failed];
    for (const slug of report.orgs) {
      const org = orgParts(report, (entry) => entry.org === slug);
      parts.push(`== Organisation ${slug} ==`, ...org.runs, ...org.watermarks, ...org.quarantine, ...org.schedules, ...org.sections);
    }
  }
  return `${parts.join('\n')}\n`;
}

/** An organisation's parts of the report, as lines (`mine` keeps its entries). */
function orgParts(report: StatusReport, mine: (entry: OfOrg) => boolean): Record<'runs' | 'watermarks' | 'quarantine' | 'schedules' | 'sections', string[]> {
  const runs = report.runs.filter(mine);
  const watermarks = report.watermarks.filter(mine);
  const quarantine = report.quarantine.filter(mine);
  const schedules = report.schedules.filter(mine);
  const sections: string[] = [];
  for (const section of report.sections.filter(mine)) {
    sections.push(section.title);
    const first = section.rows[0];
    sections.push(first ? table(Object.keys(first), section.rows.map((row) => Object.values(row))) : '(none)');
  }
  return {
    runs: [
      'Last run per resource',
      runs.length === 0
        ? '(no runs yet: try `trainsync sync`)'
        : table(
            // Narrow: the mode, start and exact times are in --json.
            ['resource', 'status', 'ended', 'pages', 'req', 'new', 'upd', 'same', 'quar', 'rem', 'note'],
            runs.map((r) => [r.resource, r.status === 'succeeded' ? 'ok' : r.status, shortTime(r.finishedAt ?? r.startedAt), r.pages, r.requests, r.inserted, r.updated, r.unchanged, r.quarantined, r.removed, r.error ?? r.note]),
            [10, 1],
          ),
    ],
    watermarks: ['Watermarks', watermarks.length === 0 ? '(none)' : table(['resource', 'value', 'updated'], watermarks.map((w) => [w.resource, w.value, w.updatedAt]))],
    quarantine: ['Quarantined records (see trainsync.quarantine)', quarantine.length === 0 ? '(none)' : table(['resource', 'records', 'last seen'], quarantine.map((q) => [q.resource, q.count, q.lastSeenAt]))],
    schedules: ['Schedules (UTC)', schedules.length === 0 ? '(none registered: start `trainsync worker`)' : table(['id', 'cron', 'next'], schedules.map((x) => [x.id, x.pattern, x.next]))],
    sections,
  };
}
