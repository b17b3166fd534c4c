import { sql, type Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import type { OrgScope } from '../warehouse/scope.ts';

/** Refused deliveries kept at most per organisation; a flood of bad signatures cannot grow the table past this. */
export const REFUSALS_KEPT = 10_000;

/**
 * Why a delivery was refused: `missing` or `invalid` signature (401: not signed with
 * this organisation's secret, e.g. another organisation's), or `organisation-mismatch`
 * (403: signed correctly, but its organisationId is not the GUID learned for this path).
 */
export type RefusalReason = 'missing' | 'invalid' | 'organisation-mismatch';

export interface WebhookRefusal {
  reason: RefusalReason;
  /** The signature header that was checked (its name, never its value). */
  header: string;
  remote: string | undefined;
  /** Words for a person (the GUIDs of a mismatch); never a secret nor the body. */
  detail?: string;
}

/** A signature refusal: anyone can cause one, so it is only ever counted (see `addRefusalCounts`). */
export type SignatureRefusalReason = Exclude<RefusalReason, 'organisation-mismatch'>;

/**
 * Records one refused delivery that was signed with the organisation's secret (only a
 * holder of it can cause one): no body, no signature value. Signature refusals are not
 * recorded one by one: see `addRefusalCounts`. `scope` is the organisation whose path was posted to.
 */
export async function recordRefusal(scope: OrgScope, refusal: WebhookRefusal): Promise<void> {
  await scope.lend((client) =>
    client.query('insert into trainsync.webhook_refusals (org, reason, header, remote, detail) values ($1, $2, $3, $4, $5)', [
      scope.org,
      refusal.reason,
      refusal.header,
      refusal.remote ?? null,
      refusal.detail ?? null,
    ]),
  );
}

/** Signature refusals of one organisation counted in one minute (trainsync.webhook_refusal_counts). */
export interface RefusalCount {
  /** Any instant of the minute; the database truncates it. */
  minute: Date;
  reason: SignatureRefusalReason;
  refusals: number;
  header: string;
  lastRemote: string | undefined;
}

/** Adds counts of the organisation of `scope` to its per-minute rows (one statement; a row per reason and minute at most). */
export async function addRefusalCounts(scope: OrgScope, counts: readonly RefusalCount[]): Promise<void> {
  if (counts.length === 0) return;
  await scope.lend((client) =>
    client.query(
      `insert into trainsync.webhook_refusal_counts as c (org, minute, reason, refusals, header, last_remote)
       select $1::text, date_trunc('minute', minute), reason, sum(refusals), max(header), max(last_remote)
         from unnest($2::timestamptz[], $3::text[], $4::bigint[], $5::text[], $6::text[]) as t(minute, reason, refusals, header, last_remote)
        group by date_trunc('minute', minute), reason
       on conflict (org, minute, reason) do update
         set refusals = c.refusals + excluded.refusals, header = excluded.header, last_remote = coalesce(excluded.last_remote, c.last_remote)`,
      [
        scope.org,
        counts.map((c) => c.minute.toISOString()),
        counts.map((c) => c.reason),
        counts.map((c) => String(c.refusals)),
        counts.map((c) => c.header),
        counts.map((c) => c.lastRemote ?? null),
      ],
    ),
  );
}

/** Keeps the last REFUSALS_KEPT refusals of each organisation, none older than `retentionDays`; returns how many went. */
export async function pruneRefusals(db: Kysely<Database>, retentionDays: number): Promise<number> {
  const result = await sql`
    delete from trainsync.webhook_refusals
     where refused_at < now() - make_interval(days => ${retentionDays})
        or id in (select id from (select id, row_number() over (partition by org order by id desc) as n from trainsync.webhook_refusals) ranked
                   where n > ${REFUSALS_KEPT})`.execute(db);
  const counts = await sql`
    delete from trainsync.webhook_refusal_counts
     where minute < now() - make_interval(days => ${retentionDays})
        or (org, minute, reason) in (select org, minute, reason from (select org, minute, reason, row_number() over (partition by org order by minute desc, reason) as n
                                       from trainsync.webhook_refusal_counts) ranked where n > ${REFUSALS_KEPT})`.execute(db);
  return Number(result.numAffectedRows ?? 0) + Number(counts.numAffectedRows ?? 0);
}

export interface RefusalRow {
  org: string;
  refused_at: Date;
  reason: string;
  header: string;
  remote: string | null;
  detail: string | null;
}

export interface RefusalCountRow {
  org: string;
  minute: Date;
  reason: string;
  refusals: number;
  header: string;
  last_remote: string | null;
}

/** The per-minute counts shown at most (the newest). */
const COUNT_ROWS_SHOWN = 60;

/**
 * One page of the refusals of the organisations named (newest first), the newest
 * per-minute counts of signature refusals, and how many deliveries were refused in the
 * last 24 hours (both kinds).
 */
export async function recentRefusals(
  db: Kysely<Database>,
  orgs: readonly string[],
  filter: { page: number; pageSize: number },
): Promise<{ rows: RefusalRow[]; hasMore: boolean; lastDay: number; perMinute: RefusalCountRow[] }> {
  const only = sql`org = any(${orgs}::text[])`;
  const [{ rows }, day, counted, perMinute] = await Promise.all([
    sql<RefusalRow>`select org, refused_at, reason, header, remote, detail from trainsync.webhook_refusals where ${only}
      order by id desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db),
    sql<{ n: number }>`select count(*)::int as n from trainsync.webhook_refusals where ${only} and refused_at > now() - interval '24 hours'`.execute(db),
    sql<{ n: string | null }>`select sum(refusals)::text as n from trainsync.webhook_refusal_counts where ${only} and minute > now() - interval '24 hours'`.execute(db),
    sql<RefusalCountRow>`select org, minute, reason, refusals::float8 as refusals, header, last_remote from trainsync.webhook_refusal_counts where ${only}
      order by minute desc, org, reason limit ${COUNT_ROWS_SHOWN}`.execute(db),
  ]);
  return {
    rows: rows.slice(0, filter.pageSize),
    hasMore: rows.length > filter.pageSize,
    lastDay: (day.rows[0]?.n ?? 0) + Number(counted.rows[0]?.n ?? 0),
    perMinute: perMinute.rows,
  };
}
