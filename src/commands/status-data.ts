import { sql, type Kysely } from 'kysely';
import type { Database, RunStatus } from '../warehouse/database.ts';
import type { RunSummary } from '../sync/runs-store.ts';

/**
 * The reads of `trainsync status` over a set of organisations, each one statement for the
 * whole set (`org = any($slugs)`), so the report costs the same few queries for 1,000
 * organisations as for one. The caller passes a page of slugs (a few hundred at most) and a
 * handle that sees them (`acrossOrganisations` for every organisation, `scope(orgs)` for some).
 */

type Db = Kysely<Database>;

/** The statuses a run ends with that leave its resource's data read (incomplete: read, with windows left for the next run). */
const GOOD: readonly RunStatus[] = ['succeeded', 'incomplete'];

/** One resource's last run in an organisation, and when it last ended well. */
export interface LastRun {
  resource: string;
  status: RunStatus;
  at: Date;
  error: string | null;
  /** When the newest succeeded or incomplete run of the resource ended; null when none did. */
  goodAt: Date | null;
}

/** What the summary needs of one organisation. */
export interface OrgFacts {
  org: string;
  /** The last run of each resource it ever ran (none: never run). */
  last: LastRun[];
  unfinishedWindows: number;
  actionsNeedingAttention: number;
  heldPlans: number;
}

/**
 * Facts of every organisation of `orgs`, in their order: one statement. Each resource's last
 * run is one probe of the index (org, resource, started_at desc), not a scan of every run.
 */
export async function orgFacts(db: Db, orgs: readonly string[], resources: readonly string[]): Promise<OrgFacts[]> {
  if (orgs.length === 0) return [];
  const result = await sql<{ org: string; last: Array<{ resource: string; status: RunStatus; at: string; error: string | null; goodAt: string | null }> | null; windows: number; actions: number; held: number }>`
    with cfg as (select slug, n from unnest(${[...orgs]}::text[]) with ordinality as c(slug, n)),
    last as (
      select cfg.slug, l.resource, l.status, l.at, l.error,
        (select g.finished_at from trainsync.runs g
          where g.org = cfg.slug and g.resource = l.resource and g.status = any(${[...GOOD]}::text[])
          order by g.started_at desc limit 1) as good_at
      from cfg cross join unnest(${[...resources]}::text[]) as res(resource)
      join lateral (
        select r.resource, r.status, coalesce(r.finished_at, r.started_at) as at, r.error from trainsync.runs r
        where r.org = cfg.slug and r.resource = res.resource order by r.started_at desc, r.id desc limit 1
      ) l on true
    ),
    windows as (select org, count(*)::int as n from trainsync.unfinished_windows where org = any(${[...orgs]}::text[]) group by org),
    actions as (select org, count(*)::int as n from trainsync.provisioning_actions where org = any(${[...orgs]}::text[]) and status in ('failed', 'needs-identity') group by org),
    held as (select org, count(*)::int as n from trainsync.held_plans where org = any(${[...orgs]}::text[]) and status = 'held' group by org)
    select cfg.slug as org,
      (select jsonb_agg(jsonb_build_object('resource', l.resource, 'status', l.status, 'at', l.at, 'error', l.error, 'goodAt', l.good_at) order by l.resource)
         from last l where l.slug = cfg.slug) as last,
      coalesce(w.n, 0) as windows, coalesce(a.n, 0) as actions, coalesce(h.n, 0) as held
    from cfg left join windows w on w.org = cfg.slug left join actions a on a.org = cfg.slug left join held h on h.org = cfg.slug
    order by cfg.n`.execute(db);
  return result.rows.map((r) => ({
    org: r.org,
    last: (r.last ?? []).map((l) => ({ resource: l.resource, status: l.status, at: new Date(l.at), error: l.error, goodAt: l.goodAt === null ? null : new Date(l.goodAt) })),
    unfinishedWindows: r.windows,
    actionsNeedingAttention: r.actions,
    heldPlans: r.held,
  }));
}

/** The last run per resource of each organisation of `orgs` (as `lastRuns` gives one's), with its `org`. */
export async function lastRunsOf(db: Db, orgs: readonly string[], resources: readonly string[]): Promise<Array<RunSummary & { org: string }>> {
  if (orgs.length === 0) return [];
  const result = await sql<{
    org: string; id: number; resource: string; job_id: string | null; mode: string | null; status: RunStatus; started_at: Date; finished_at: Date | null;
    pages: number; inserted: number; updated: number; unchanged: number; quarantined: number; removed: number; requests: number; error: string | null; note: string | null;
  }>`
    select l.* from unnest(${[...orgs]}::text[]) with ordinality as c(slug, n)
    cross join unnest(${[...resources]}::text[]) as res(resource)
    join lateral (
      select r.org, r.id, r.resource, r.job_id, r.mode, r.status, r.started_at, r.finished_at, r.pages, r.inserted, r.updated, r.unchanged,
        r.quarantined, r.removed, r.requests, r.error, r.note
      from trainsync.runs r where r.org = c.slug and r.resource = res.resource order by r.started_at desc, r.id desc limit 1
    ) l on true
    order by c.n, l.resource`.execute(db);
  return result.rows.map((r) => ({
    org: r.org,
    id: r.id,
    resource: r.resource,
    jobId: r.job_id,
    mode: r.mode,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    pages: r.pages,
    inserted: r.inserted,
    updated: r.updated,
    unchanged: r.unchanged,
    quarantined: r.quarantined,
    removed: r.removed,
    requests: r.requests,
    error: r.error,
    note: r.note,
  }));
}

/** The watermarks of `orgs`, by organisation (in `orgs`' order) and resource. */
export async function watermarksOf(db: Db, orgs: readonly string[]): Promise<Array<{ org: string; resource: string; value: string; updatedAt: Date }>> {
  if (orgs.length === 0) return [];
  const result = await sql<{ org: string; resource: string; value: string; updated_at: Date }>`
    select w.org, w.resource, w.value, w.updated_at from trainsync.watermarks w
    join unnest(${[...orgs]}::text[]) with ordinality as c(slug, n) on c.slug = w.org
    order by c.n, w.resource`.execute(db);
  return result.rows.map((w) => ({ org: w.org, resource: w.resource, value: w.value, updatedAt: w.updated_at }));
}

/** Quarantined records of `orgs`, counted by organisation and resource. */
export async function quarantineOf(db: Db, orgs: readonly string[]): Promise<Array<{ org: string; resource: string; count: number; lastSeenAt: Date }>> {
  if (orgs.length === 0) return [];
  const result = await sql<{ org: string; resource: string; count: number; last_seen_at: Date }>`
    select q.org, q.resource, count(*)::int as count, max(q.last_seen_at) as last_seen_at from trainsync.quarantine q
    join unnest(${[...orgs]}::text[]) with ordinality as c(slug, n) on c.slug = q.org
    group by c.n, q.org, q.resource order by c.n, q.resource`.execute(db);
  return result.rows.map((r) => ({ org: r.org, resource: r.resource, count: r.count, lastSeenAt: r.last_seen_at }));
}
