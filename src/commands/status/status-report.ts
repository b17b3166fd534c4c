import { DEFAULT_ORG } from '../../settings/orgs-file.ts';
import type { Kysely } from 'kysely';
import type { App } from '../../runtime/app.ts';
import { QUEUE_NAMES } from '../../queue/names.ts';
import type { ActiveHolder } from '../../queue/orphans.ts';
import { lastRunsOf, type RunSummary } from '../../sync/runs-store.ts';
import { quarantineOf, watermarksOf } from '../../sync/sync-state.ts';
import type { Database } from '../../warehouse/database.ts';

/** One wing's part of `status` for one organisation: a title and its rows. */
export interface SectionRows {
  title: string;
  rows: Array<Record<string, unknown>>;
}

/**
 * One wing's part of `status` (provisioning adds actions needing attention, webhooks their
 * backlog…), for a set of organisations at once: one or a few set-based queries, an entry
 * for every organisation of `orgs`, through a handle that sees them.
 */
export type StatusSection = (db: Kysely<Database>, orgs: readonly string[]) => Promise<Map<string, SectionRows>>;

/** A section read for one organisation through its own scope (a caller of one, the tests). */
export function sectionOfOne(section: StatusSection): (app: App, org: string) => Promise<SectionRows> {
  return async (app, org) => (await section(app.scopes.scope(org).db, [org])).get(org)!;
}

/** Up to this many organisations, `status` prints a block per organisation; above it, the summary (status-summary.ts). */
export const DETAIL_UP_TO = 10;

/** Set on the per-organisation entries when the report covers an organisation other than `default` alone. */
export type OfOrg = { org?: string };

export interface StatusReport {
  queues: Array<{ queue: string; workers: number; counts: Record<string, number> }>;
  runs: Array<Omit<RunSummary, 'status'> & { status: string } & OfOrg>;
  watermarks: Array<{ resource: string; value: string; updatedAt: Date } & OfOrg>;
  quarantine: Array<{ resource: string; count: number; lastSeenAt: Date } & OfOrg>;
  failedJobs: Array<{ queue: string; id: string; name: string; failedReason: string; attemptsMade: number; finishedAt: string | null }>;
  /** Jobs taken by a worker: `running (worker X)`, or `orphaned` when that worker is gone. */
  activeJobs: Array<{ queue: string; id: string; name: string; state: string; worker: string | null }>;
  schedules: Array<{ id: string; pattern: string | null; next: string | null } & OfOrg>;
  sections: Array<SectionRows & OfOrg>;
  /** The organisations reported, in configuration order, when they are not `default` alone. */
  orgs?: string[];
}

export type DeploymentStatus = Pick<StatusReport, 'queues' | 'failedJobs' | 'activeJobs'>;

/** The deployment's part of the report (one queue serves every organisation): queue counts, failed jobs, jobs taken. */
export async function deploymentStatus(app: App): Promise<DeploymentStatus> {
  const queues = await Promise.all(QUEUE_NAMES.map(async (name) => ({ queue: name, workers: await app.queue.workers(name), counts: await app.queue.counts(name) })));
  const failedJobs = (await Promise.all(QUEUE_NAMES.map(async (name) => (await app.queue.failedJobs(name, 20)).map((job) => ({ queue: name, ...job }))))).flat();
  const activeJobs = (
    await Promise.all(
      QUEUE_NAMES.map(async (name) =>
        (await app.queue.activeJobs(name, 50)).flatMap((job) => (job.holder ? [{ queue: name, id: job.id, name: job.name, state: holderWord(job.holder), worker: job.holder.worker ?? null }] : [])),
      ),
    )
  ).flat();
  return { queues, failedJobs, activeJobs };
}

/** The resources whose runs `status` reports: every resource a job of the catalog syncs. */
export function statusResources(app: App): string[] {
  return [...new Set([...app.catalog.values()].flatMap((job) => (job.resource ? [job.resource] : [])))].sort();
}

/**
 * Reads of `orgs` through a handle that sees them: their own scope when they are a few, the
 * named escape when the report pages through many (every organisation, or a page of them).
 */
export function readOrgs<T>(app: App, orgs: readonly string[], fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  // One transaction for the reads of a call: each store's statement (one per table) would
  // otherwise be a transaction of its own, with its own scope set, on its own connection.
  if (orgs.length <= DETAIL_UP_TO) return app.scopes.scope(orgs).transaction((tx) => fn(tx.db));
  return app.scopes.acrossOrganisations('status: many organisations, in set-based queries', (all) => all.transaction((tx) => fn(tx.db)));
}

/** `fn` of each item, one after another: the reads of `readOrgs` share one transaction's connection. */
export async function eachInTurn<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (const item of items) results.push(await fn(item));
  return results;
}

/** A run left running whose job no worker holds waits to resume, or is gone; one held reads as its holder. */
export function runState<T extends { status: string; jobId: string | null }>(run: T, activeJobs: DeploymentStatus['activeJobs']): T {
  if (run.status !== 'running') return run;
  const job = activeJobs.find((j) => j.id === run.jobId);
  return { ...run, status: job?.state ?? 'running (queued to resume)' };
}

/** Scheduler entries by organisation (`<org>.<job>`, or the bare job name for `default`; see orgScoped). */
export function schedulesByOrg(schedules: ReadonlyArray<{ id: string; pattern: string | null; next: string | null }>, slugs: readonly string[]): Map<string, Array<{ id: string; pattern: string | null; next: string | null }>> {
  const known = new Set(slugs);
  const byOrg = new Map<string, Array<{ id: string; pattern: string | null; next: string | null }>>();
  for (const schedule of schedules) {
    const org = scheduleOrg(schedule.id, known);
    byOrg.set(org, [...(byOrg.get(org) ?? []), schedule]);
  }
  return byOrg;
}

/**
 * The report for `orgs` (default: every configured organisation), a few of them: queues, jobs
 * taken and failed jobs are the deployment's; runs, watermarks, quarantine, schedules and
 * sections are per organisation, each entry carrying its `org` unless the report is of
 * `default` alone (a single-organisation deployment's report is unchanged). Each part is one
 * set-based query over `orgs`, whatever their number.
 */
export async function collectStatus(app: App, sections: readonly StatusSection[] = [], orgs: readonly string[] = app.config.orgs.map((org) => org.slug)): Promise<StatusReport> {
  const { queues, failedJobs, activeJobs } = await deploymentStatus(app);
  const slugs = app.config.orgs.map((org) => org.slug);
  const labelled = !(orgs.length === 1 && orgs[0] === DEFAULT_ORG && slugs.length === 1);
  const tag = <T extends { org: string }>(entries: T[]): Array<Omit<T, 'org'> & OfOrg> => (labelled ? entries : entries.map(({ org: _org, ...rest }) => rest));
  const schedules = schedulesByOrg(await app.queue.schedules(), slugs);
  const read = await readOrgs(app, orgs, async (db) => ({
    runs: await lastRunsOf(db, orgs, statusResources(app)),
    watermarks: await watermarksOf(db, orgs),
    quarantine: await quarantineOf(db, orgs),
    sections: await eachInTurn(sections, (section) => section(db, orgs)),
  }));
  return {
    queues,
    runs: tag(read.runs.map((run) => runState(run, activeJobs))),
    activeJobs,
    watermarks: tag(read.watermarks),
    quarantine: tag(read.quarantine),
    failedJobs,
    schedules: tag(orgs.flatMap((org) => (schedules.get(org) ?? []).map((schedule) => ({ ...schedule, org })))),
    sections: tag(orgs.flatMap((org) => read.sections.map((section) => ({ ...section.get(org)!, org })))),
    ...(labelled ? { orgs: [...orgs] } : {}),
  };
}

/** The organisation a scheduler id belongs to (`<org>.<job>`, or the bare job name for `default`; see orgScoped). */
function scheduleOrg(id: string, slugs: ReadonlySet<string>): string {
  const dot = id.indexOf('.');
  const prefix = dot > 0 ? id.slice(0, dot) : undefined;
  return prefix !== undefined && slugs.has(prefix) ? prefix : DEFAULT_ORG;
}

function holderWord(holder: ActiveHolder): string {
  return holder.orphaned ? `orphaned (worker ${holder.worker ?? 'unknown'} gone)` : `running (worker ${holder.worker ?? 'unknown'})`;
}

