import { utcMinute } from '../../lib/utc-minute.ts';
import { fitTable } from './fit-table.ts';
import type { DeploymentStatus, OfOrg, StatusReport } from '../status/status-report.ts';

/** `YYYY-MM-DD HH:MM UTC`, whatever the day: a time is never shown without its date and zone. */
export function shortTime(at: Date): string {
  return utcMinute(at);
}

/** Tables at most 100 columns wide: the last column (notes, reasons) wraps. */
export function table(head: string[], rows: unknown[][], flex?: number[]): string {
  return fitTable(head, rows, flex ? { flex } : {});
}

/** The deployment's part as lines: queues, jobs taken by a worker, failed jobs. */
export function deploymentParts(report: DeploymentStatus): { queues: string[]; taken: string[]; failed: string[] } {
  const queues = ['Queues', table(['queue', 'workers', 'waiting', 'active', 'delayed', 'failed', 'completed'], report.queues.map((q) => [q.queue, q.workers, q.counts.waiting, q.counts.active, q.counts.delayed, q.counts.failed, q.counts.completed]))];
  const taken = ['Jobs taken by a worker', report.activeJobs.length === 0 ? '(none)' : table(['queue', 'job', 'id', 'state'], report.activeJobs.map((j) => [j.queue, j.name, j.id, j.state]))];
  const failed = [
    'Failed jobs (kept for inspection)',
    report.failedJobs.length === 0 ? '(none)' : table(['queue', 'job', 'id', 'attempts', 'finished', 'reason'], report.failedJobs.map((j) => [j.queue, j.name, j.id, j.attemptsMade, j.finishedAt, j.failedReason])),
  ];
  return { queues, taken, failed };
}

export function renderStatus(report: StatusReport): string {
  const { queues, taken, failed } = deploymentParts(report);
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
