import { once } from 'node:events';
import type { App } from '../../runtime/app.ts';
import { lastRunsOf } from '../../sync/runs-store.ts';
import { quarantineOf, watermarksOf } from '../../sync/sync-state.ts';
import { orgFacts, type LastRun, type OrgFacts } from '../status/status-data.ts';
import { deploymentParts, shortTime, table } from './status-render.ts';
import { deploymentStatus, eachInTurn, readOrgs, runState, schedulesByOrg, statusResources, type StatusSection } from '../status/status-report.ts';

/**
 * `status` over many organisations: the summary a person reads (counts by state, then the
 * first organisations needing attention) and the JSON a program reads (every organisation,
 * written as it is read). Both read the organisations a page at a time, each page in a few
 * set-based statements, so time grows with the organisations but memory does not.
 */

/** Organisations read per page: a few statements each, whatever the page's size. */
export const PAGE = 200;
/** Organisations needing attention the summary names; the rest are counted. */
export const ATTENTION_SHOWN = 20;

export const ORG_STATES = ['ok', 'running', 'failed', 'stale', 'never run'] as const;
export type OrgState = (typeof ORG_STATES)[number];

export interface OrgStatus {
  org: string;
  state: OrgState;
  /** Resources whose last run failed, is running, or last ended well longer ago than the stale limit (or never). */
  failed: string[];
  running: string[];
  stale: string[];
  unfinishedWindows: number;
  actionsNeedingAttention: number;
  heldPlans: number;
  /** When its newest good run (succeeded or incomplete) ended, if any. */
  lastSuccessAt: Date | null;
  /** Failed, stale, or with unfinished windows, actions needing attention or held plans. */
  attention: boolean;
  /** One line: what needs attention, or the state. */
  note: string;
}

/**
 * An organisation's state from its facts: never run (no run at all), failed (a resource's last
 * run failed), running (one is), stale (a resource it runs has not ended well within
 * `staleAfterMs`), else ok. A cancelled last run counts only through staleness.
 */
export function classify(facts: OrgFacts, now: Date, staleAfterMs: number): OrgStatus {
  const failed = facts.last.filter((l) => l.status === 'failed');
  const running = facts.last.filter((l) => l.status === 'running').map((l) => l.resource);
  const stale = facts.last.filter((l) => l.status !== 'running' && (l.goodAt === null || now.getTime() - l.goodAt.getTime() > staleAfterMs));
  const state: OrgState = facts.last.length === 0 ? 'never run' : failed.length > 0 ? 'failed' : running.length > 0 ? 'running' : stale.length > 0 ? 'stale' : 'ok';
  const goods = facts.last.flatMap((l) => (l.goodAt ? [l.goodAt.getTime()] : []));
  const notes = [
    ...failed.map((l) => `${l.resource} failed ${shortTime(l.at)}${l.error ? `: ${oneLine(l.error)}` : ''}`),
    ...staleNotes(stale.filter((l) => l.status !== 'failed')),
    ...(facts.unfinishedWindows > 0 ? [`${facts.unfinishedWindows} unfinished window${facts.unfinishedWindows === 1 ? '' : 's'}`] : []),
    ...(facts.actionsNeedingAttention > 0 ? [`${facts.actionsNeedingAttention} provisioning action${facts.actionsNeedingAttention === 1 ? '' : 's'} needing attention`] : []),
    ...(facts.heldPlans > 0 ? [`${facts.heldPlans} held plan${facts.heldPlans === 1 ? '' : 's'}`] : []),
  ];
  return {
    org: facts.org,
    state,
    failed: failed.map((l) => l.resource),
    running,
    stale: stale.map((l) => l.resource),
    unfinishedWindows: facts.unfinishedWindows,
    actionsNeedingAttention: facts.actionsNeedingAttention,
    heldPlans: facts.heldPlans,
    lastSuccessAt: goods.length === 0 ? null : new Date(Math.max(...goods)),
    attention: state === 'failed' || state === 'stale' || facts.unfinishedWindows > 0 || facts.actionsNeedingAttention > 0 || facts.heldPlans > 0,
    note: notes.join('; ') || (state === 'running' ? `running: ${running.join(', ')}` : state),
  };
}

/** Stale resources in one or two phrases: those last ok (at the oldest of them), those never ok. */
function staleNotes(stale: readonly LastRun[]): string[] {
  const old = stale.flatMap((l) => (l.goodAt ? [{ resource: l.resource, at: l.goodAt }] : []));
  const never = stale.filter((l) => l.goodAt === null).map((l) => l.resource);
  const oldest = old.reduce<Date | undefined>((min, l) => (min === undefined || l.at < min ? l.at : min), undefined);
  return [...(oldest ? [`${old.map((l) => l.resource).join(', ')} last ok ${shortTime(oldest)}`] : []), ...(never.length > 0 ? [`${never.join(', ')} never ok`] : [])];
}

const oneLine = (text: string): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
};

export interface SummaryOptions {
  staleAfterMs: number;
  /** The page of the organisations chosen this report covers (--offset, and how many were chosen). */
  page: { from: number; of: number };
  now?: Date;
}

/** Counts by state, and how many need attention. */
export type StateCounts = Record<OrgState, number> & { organisations: number; attention: number };

function emptyCounts(): StateCounts {
  return { organisations: 0, ok: 0, running: 0, failed: 0, stale: 0, 'never run': 0, attention: 0 };
}

function count(counts: StateCounts, status: OrgStatus): void {
  counts.organisations += 1;
  counts[status.state] += 1;
  if (status.attention) counts.attention += 1;
}

/** The statuses of `orgs`, a page of PAGE at a time. */
async function* statuses(app: App, orgs: readonly string[], options: SummaryOptions): AsyncGenerator<OrgStatus[]> {
  const resources = statusResources(app);
  for (let at = 0; at < orgs.length; at += PAGE) {
    const page = orgs.slice(at, at + PAGE);
    const facts = await readOrgs(app, page, (db) => orgFacts(db, page, resources));
    const now = options.now ?? new Date();
    yield facts.map((f) => classify(f, now, options.staleAfterMs));
  }
}

/** The text report for many organisations: the deployment's queues and jobs, counts by state, the first needing attention. */
export async function renderSummary(app: App, orgs: readonly string[], options: SummaryOptions): Promise<string> {
  const deployment = await deploymentStatus(app);
  const counts = emptyCounts();
  const shown: OrgStatus[] = [];
  for await (const page of statuses(app, orgs, options)) {
    for (const status of page) {
      count(counts, status);
      if (status.attention && shown.length < ATTENTION_SHOWN) shown.push(status);
    }
  }
  const { queues, taken, failed } = deploymentParts(deployment);
  const { from, of } = options.page;
  const which = orgs.length === of ? `${of}` : `${from + 1}–${from + orgs.length} of ${of}`;
  const byState = ORG_STATES.map((state) => `${state} ${counts[state]}`).join(', ');
  const lines = [...queues, ...taken, ...failed, `Organisations: ${which} (${byState})`];
  if (counts.attention === 0) lines.push('Needing attention: none');
  else {
    lines.push(`Needing attention: ${counts.attention} (failed or stale runs, unfinished windows, provisioning actions, held plans)`);
    lines.push(table(['org', 'state', 'what'], shown.map((s) => [s.org, s.state, s.note])));
    const more = counts.attention - shown.length;
    if (more > 0) lines.push(`and ${more} more: use --org <slug>, --offset/--limit, or --json`);
  }
  return `${lines.join('\n')}\n`;
}

type Out = NodeJS.WritableStream;

/** Writes, waiting for the reader when the pipe is full: what is in memory stays one page. */
async function put(out: Out, text: string): Promise<void> {
  if (!out.write(text)) await once(out, 'drain');
}

/** `"key":[…]` of one kind of entry, a page of organisations at a time, one entry a line. */
async function putArray<T>(out: Out, key: string, orgs: readonly string[], read: (page: string[]) => Promise<T[]>): Promise<void> {
  await put(out, `,\n${JSON.stringify(key)}: [`);
  let first = true;
  for (let at = 0; at < orgs.length; at += PAGE) {
    const entries = await read(orgs.slice(at, at + PAGE));
    if (entries.length === 0) continue;
    await put(out, `${first ? '\n' : ',\n'}${entries.map((entry) => JSON.stringify(entry)).join(',\n')}`);
    first = false;
  }
  await put(out, first ? ']' : '\n]');
}

/**
 * `status --json` for many organisations: the keys of the report of a few (queues, activeJobs,
 * failedJobs, orgs, runs, watermarks, quarantine, schedules, sections: each entry with its
 * `org`), plus `organisations` (each one's state and what needs attention) and `summary`
 * (the counts), written as each page of organisations is read.
 */
export async function streamStatusJson(app: App, sections: readonly StatusSection[], orgs: readonly string[], options: SummaryOptions, out: Out): Promise<void> {
  const deployment = await deploymentStatus(app);
  const resources = statusResources(app);
  const schedules = schedulesByOrg(await app.queue.schedules(), app.config.orgs.map((org) => org.slug));
  const counts = emptyCounts();
  await put(out, `{\n"queues": ${JSON.stringify(deployment.queues)},\n"activeJobs": ${JSON.stringify(deployment.activeJobs)},\n"failedJobs": ${JSON.stringify(deployment.failedJobs)},\n"orgs": ${JSON.stringify(orgs)}`);
  await put(out, `,\n"organisations": [`);
  let first = true;
  for await (const page of statuses(app, orgs, options)) {
    for (const status of page) {
      count(counts, status);
      const { attention, note, ...entry } = status;
      await put(out, `${first ? '\n' : ',\n'}${JSON.stringify({ ...entry, attention, note })}`);
      first = false;
    }
  }
  await put(out, first ? ']' : '\n]');
  await putArray(out, 'runs', orgs, async (page) => (await readOrgs(app, page, (db) => lastRunsOf(db, page, resources))).map((run) => runState(run, deployment.activeJobs)));
  await putArray(out, 'watermarks', orgs, (page) => readOrgs(app, page, (db) => watermarksOf(db, page)));
  await putArray(out, 'quarantine', orgs, (page) => readOrgs(app, page, (db) => quarantineOf(db, page)));
  await putArray(out, 'schedules', orgs, async (page) => page.flatMap((org) => (schedules.get(org) ?? []).map((schedule) => ({ ...schedule, org }))));
  await putArray(out, 'sections', orgs, async (page) => {
    const read = await readOrgs(app, page, (db) => eachInTurn(sections, (section) => section(db, page)));
    return page.flatMap((org) => read.map((section) => ({ ...section.get(org)!, org })));
  });
  await put(out, `,\n"summary": ${JSON.stringify(counts)}\n}\n`);
}
