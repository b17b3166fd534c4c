/**
 * kysely row types of the webhook tables in schema `trainsync` (sql/migrations/0007_webhooks.sql
 * and 0017 are the source of truth), beside their store (store.ts). They join the warehouse's
 * `Database` by declaration merging (below), so storage imports no wing.
 */
import type { ColumnType } from 'kysely';
import type { GeneratedInstant as DefaultInstant, NullableInstant } from '../warehouse/column-types.ts';


/** How an event ended; null while it waits. */
export type WebhookEventOutcome = 'loaded' | 'not-found' | 'failed' | 'test' | 'unknown-type' | 'invalid';
/** How one result an event names ended; null while it waits. */
export type WebhookResultOutcome = 'loaded' | 'not-found' | 'failed';

export interface WebhookEventsTable {
  /** The organisation's slug (0017): the key is (org, event_id). */
  org: string;
  event_id: string;
  event_type: string;
  organisation_id: string | null;
  sent_at: NullableInstant;
  /** The envelope as received: parsed on read, written as JSON text. */
  payload: ColumnType<unknown, string, string>;
  received_at: DefaultInstant;
  processed_at: NullableInstant;
  outcome: ColumnType<WebhookEventOutcome | null, WebhookEventOutcome | null | undefined, WebhookEventOutcome | null>;
  error: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface WebhookEventResultsTable {
  org: string;
  event_id: string;
  result_id: string;
  received_at: ColumnType<Date, Date | string, Date | string>;
  processed_at: NullableInstant;
  outcome: ColumnType<WebhookResultOutcome | null, WebhookResultOutcome | null | undefined, WebhookResultOutcome | null>;
}

export interface WebhookTables {
  'trainsync.webhook_events': WebhookEventsTable;
  'trainsync.webhook_event_results': WebhookEventResultsTable;
}

declare module '../warehouse/database.ts' {
  interface Database extends WebhookTables {}
}
