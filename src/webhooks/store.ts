import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import type { WebhookResultOutcome } from './tables.ts';
import { sentAt, type Envelope, type EventPlan } from './events.ts';
import type { OrgDb, OrgScope } from '../warehouse/scope.ts';

/**
 * The store of webhook events (trainsync.webhook_events and webhook_event_results): every
 * statement that names them is here (test/table-owners.test.ts keeps it so).
 * Times that are compared with each other (received, fetched, processed) all come from
 * the database clock, so processes on several hosts agree. Every row belongs to one
 * organisation (`org`, the slug of the path the delivery came to): event ids and
 * result ids are only unique within one organisation, so every lookup names it, from the
 * organisation's handle each function takes (OrgDb).
 */

export interface StoredEvent {
  org: string;
  /** False when the event id was stored already (a retried or duplicated delivery). */
  stored: boolean;
  eventId: string;
}

/**
 * Stores an event and the results it names in one transaction; the caller acknowledges
 * only after this resolves. An event with nothing to load is stored already processed.
 */
export async function storeEvent(scope: OrgScope, envelope: Envelope, payloadJson: string, plan: EventPlan): Promise<StoredEvent> {
  const eventId = envelope.eventId.trim().toLowerCase();
  return scope.transaction(async ({ db, org }) => {
    const done = plan.kind === 'done';
    const inserted = await db
      .insertInto('trainsync.webhook_events')
      .values({
        org,
        event_id: eventId,
        event_type: envelope.eventType,
        organisation_id: envelope.organisationId ?? null,
        sent_at: sentAt(envelope),
        payload: payloadJson,
        processed_at: done ? sql<Date>`clock_timestamp()` : null,
        outcome: done ? plan.outcome : null,
        error: done ? (plan.error ?? null) : null,
      })
      .onConflict((oc) => oc.columns(['org', 'event_id']).doNothing())
      .returning(['received_at'])
      .executeTakeFirst();
    if (!inserted) return { org, stored: false, eventId };
    if (plan.kind === 'load' && plan.resultIds.length > 0) {
      await db
        .insertInto('trainsync.webhook_event_results')
        .values(plan.resultIds.map((resultId) => ({ org, event_id: eventId, result_id: resultId, received_at: inserted.received_at })))
        .execute();
    }
    return { org, stored: true, eventId };
  });
}

/** The database clock now. */
export async function databaseNow(db: Kysely<Database>): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`select clock_timestamp() as now`.execute(db);
  return rows[0]!.now;
}

/** Whether any event of the organisation naming the result still waits for it. */
export async function hasPendingResult({ db, org }: OrgDb, resultId: string): Promise<boolean> {
  const row = await db
    .selectFrom('trainsync.webhook_event_results')
    .select('event_id')
    .where('org', '=', org)
    .where('result_id', '=', resultId)
    .where('processed_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Settles every waiting row of `resultId` received up to `cutoff` (the instant before
 * the fetch whose answer they get) and returns their events. The events are locked
 * first, in id order: two jobs finishing two results of one multi-course event then
 * settle it one after the other, so the second one sees the first one's rows.
 */
export async function settleResult({ db, org }: OrgDb, resultId: string, cutoff: Date, outcome: WebhookResultOutcome): Promise<string[]> {
  const events = await db
    .selectFrom('trainsync.webhook_event_results')
    .select('event_id')
    .where('org', '=', org)
    .where('result_id', '=', resultId)
    .where('processed_at', 'is', null)
    .where('received_at', '<=', cutoff)
    .execute();
  const ids = [...new Set(events.map((e) => e.event_id))].sort();
  if (ids.length === 0) return [];
  await db.selectFrom('trainsync.webhook_events').select('event_id').where('org', '=', org).where('event_id', 'in', ids).orderBy('event_id').forNoKeyUpdate().execute();
  await db
    .updateTable('trainsync.webhook_event_results')
    .set({ processed_at: sql<Date>`clock_timestamp()`, outcome })
    .where('org', '=', org)
    .where('result_id', '=', resultId)
    .where('event_id', 'in', ids)
    .where('processed_at', 'is', null)
    .execute();
  return ids;
}

export interface SettledEvent {
  org: string;
  eventId: string;
  eventType: string;
  outcome: string;
  /** From received_at to the transaction that wrote its last result (committed right after). */
  seconds: number;
}

/**
 * Marks events whose every result is settled as processed: `failed` if any result
 * failed, else `not-found` if any could not be read, else `loaded`: every such event of
 * every organisation (the sweep's safety net, on a handle across organisations).
 */
export function settleEvents(db: Kysely<Database>, error: string | null): Promise<SettledEvent[]> {
  return settle(db, error, sql``);
}

/** `settleEvents` of just these events of the organisation of `scope` (a job's own). */
export async function settleEventsOf({ db, org }: OrgDb, error: string | null, eventIds: readonly string[]): Promise<SettledEvent[]> {
  if (eventIds.length === 0) return [];
  return settle(db, error, sql`and r.org = ${org} and r.event_id in (${sql.join(eventIds)})`);
}

async function settle(db: Kysely<Database>, error: string | null, these: RawBuilder<unknown>): Promise<SettledEvent[]> {
  const { rows } = await sql<{ org: string; event_id: string; event_type: string; outcome: string; seconds: number }>`
    with settled as (
      select r.org, r.event_id,
             bool_or(r.outcome = 'failed') as any_failed,
             bool_or(r.outcome = 'not-found') as any_missing
      from trainsync.webhook_event_results r
      join trainsync.webhook_events e on e.org = r.org and e.event_id = r.event_id and e.processed_at is null
      where true ${these}
      group by r.org, r.event_id
      having bool_and(r.processed_at is not null)
    )
    update trainsync.webhook_events e
    set processed_at = clock_timestamp(),
        outcome = case when s.any_failed then 'failed' when s.any_missing then 'not-found' else 'loaded' end,
        error = case when s.any_failed or s.any_missing then ${error}::text else null end
    from settled s
    where e.org = s.org and e.event_id = s.event_id and e.processed_at is null
    returning e.org, e.event_id, e.event_type, e.outcome, extract(epoch from e.processed_at - e.received_at)::float8 as seconds`.execute(db);
  return rows.map((r) => ({ org: r.org, eventId: r.event_id, eventType: r.event_type, outcome: r.outcome, seconds: r.seconds }));
}

/** A result some stored event of the organisation still waits for. */
export interface PendingResult {
  org: string;
  resultId: string;
}

/** Results some stored event still waits for, of every organisation, received at least `minAgeMs` ago (oldest first). */
export async function pendingResults(db: Kysely<Database>, minAgeMs: number, limit: number): Promise<PendingResult[]> {
  const rows = await db
    .selectFrom('trainsync.webhook_event_results')
    .select(['org', 'result_id'])
    .select((eb) => eb.fn.min('received_at').as('first'))
    .where('processed_at', 'is', null)
    .where('received_at', '<=', sql<Date>`clock_timestamp() - make_interval(secs => ${minAgeMs / 1000})`)
    .groupBy(['org', 'result_id'])
    .orderBy('first')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ org: r.org, resultId: r.result_id }));
}

/** Deletes processed events older than `days`, of every organisation (their result rows go with them); returns how many. */
export async function pruneEvents(db: Kysely<Database>, days: number): Promise<number> {
  const deleted = await db
    .deleteFrom('trainsync.webhook_events')
    .where('processed_at', '<', sql<Date>`now() - make_interval(days => ${days})`)
    .executeTakeFirst();
  return Number(deleted.numDeletedRows);
}

export interface WebhookBacklog {
  lastReceivedAt: Date | null;
  lastEventType: string | null;
  lastEventId: string | null;
  /** Events stored and not yet processed. */
  waiting: number;
  oldestWaitingSince: Date | null;
  /** Events received in the last 24 hours, by outcome (`waiting` for those not processed). */
  lastDay: Record<string, number>;
}

/** What the console shows of the organisations it shows: the last event received and the backlog. */
export async function webhookBacklog(db: Kysely<Database>, shown: readonly string[]): Promise<WebhookBacklog> {
  const orgs = [...shown];
  if (orgs.length === 0) return { lastReceivedAt: null, lastEventType: null, lastEventId: null, waiting: 0, oldestWaitingSince: null, lastDay: {} };
  const last = await db
    .selectFrom('trainsync.webhook_events')
    .select(['event_id', 'event_type', 'received_at'])
    .where('org', 'in', orgs)
    .orderBy('received_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  const waiting = await db
    .selectFrom('trainsync.webhook_events')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('received_at').as('oldest')])
    .where('org', 'in', orgs)
    .where('processed_at', 'is', null)
    .executeTakeFirstOrThrow();
  const day = await db
    .selectFrom('trainsync.webhook_events')
    .select((eb) => [eb.fn.coalesce('outcome', sql<string>`'waiting'`).as('outcome'), eb.fn.countAll<number>().as('n')])
    .where('org', 'in', orgs)
    .where('received_at', '>', sql<Date>`now() - interval '1 day'`)
    .groupBy('outcome')
    .execute();
  return {
    lastReceivedAt: last?.received_at ?? null,
    lastEventType: last?.event_type ?? null,
    lastEventId: last?.event_id ?? null,
    waiting: Number(waiting.n),
    oldestWaitingSince: (waiting.oldest as Date | null) ?? null,
    lastDay: Object.fromEntries(day.map((d) => [d.outcome, Number(d.n)])),
  };
}

/** Per organisation of `orgs`: the last event received and the backlog, as `status` shows them; those that never received one are absent. */
export interface WebhookBacklogsOf {
  last: Array<{ org: string; event_type: string; received_at: Date }>;
  waiting: Array<{ org: string; n: number; oldest: Date | null }>;
  lastDay: Array<{ org: string; outcome: string; n: number }>;
}

/**
 * `webhookBacklog` of each organisation of `orgs` apart: three statements for all of them; the
 * last event is one probe of the index (org, received_at desc) per organisation.
 */
export async function webhookBacklogsOf(db: Kysely<Database>, orgs: readonly string[]): Promise<WebhookBacklogsOf> {
  const slugs = [...orgs];
  // One after another: a caller may hand a transaction's handle, one connection.
  const last = await sql<{ org: string; event_type: string; received_at: Date }>`
      select c.slug as org, e.event_type, e.received_at from unnest(${slugs}::text[]) as c(slug)
      join lateral (select event_type, received_at from trainsync.webhook_events where org = c.slug order by received_at desc limit 1) e on true`.execute(db);
  const waiting = await webhookWaitingOf(db, slugs);
  const lastDay = await sql<{ org: string; outcome: string; n: number }>`
      select org, coalesce(outcome, 'waiting') as outcome, count(*)::int as n from trainsync.webhook_events
      where org = any(${slugs}::text[]) and received_at > now() - interval '1 day' group by org, coalesce(outcome, 'waiting')`.execute(db);
  return { last: last.rows, waiting, lastDay: lastDay.rows };
}

/**
 * The backlog of each organisation of `orgs` that has one: events stored and not yet processed,
 * and when the oldest was received. One statement over the pending index (`status`, and the
 * metrics at each scrape).
 */
export async function webhookWaitingOf(db: Kysely<Database>, orgs: readonly string[]): Promise<Array<{ org: string; n: number; oldest: Date | null }>> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<{ org: string; n: number; oldest: Date | null }>`
      select org, count(*)::int as n, min(received_at) as oldest from trainsync.webhook_events
      where org = any(${[...orgs]}::text[]) and processed_at is null group by org order by org`.execute(db);
  return rows;
}

/** The console's row of a webhook event. */
export interface EventRow {
  org: string;
  event_id: string;
  event_type: string;
  received_at: Date;
  processed_at: Date | null;
  outcome: string | null;
  error: string | null;
}

/** One page of the events of `orgs`, newest first, filtered by outcome (`waiting`: not yet processed). */
export async function recentEvents(db: Kysely<Database>, orgs: readonly string[], filter: { outcome?: string | undefined; page: number; pageSize: number }): Promise<{ rows: EventRow[]; hasMore: boolean }> {
  const outcome = filter.outcome === 'waiting' ? sql`and outcome is null` : filter.outcome ? sql`and outcome = ${filter.outcome}` : sql``;
  const { rows } = await sql<EventRow>`
    select org, event_id, event_type, received_at, processed_at, outcome, error from trainsync.webhook_events where org = any(${orgs}::text[]) ${outcome}
     order by received_at desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db);
  return { rows: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize };
}
