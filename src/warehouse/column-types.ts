/**
 * Column types shared by the row-type files of src/warehouse (database.ts and the
 * *-tables.ts it composes). A file of its own so that no row-type file imports
 * database.ts back (that was a cycle).
 */
import type { ColumnType } from 'kysely';

/** timestamptz: a Date on read; a Date or an ISO string on write. */
export type Instant = ColumnType<Date, Date | string, Date | string>;
/** A timestamptz that the database fills by default. */
export type GeneratedInstant = ColumnType<Date, Date | string | undefined, Date | string>;
/** A timestamptz that may be null (e.g. removed_at). */
export type NullableInstant = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

/** The columns every listed entity carries for change and removal tracking. */
export interface SeenColumns {
  first_seen_at: Instant;
  last_seen_at: Instant;
  removed_at: NullableInstant;
  updated_at: Instant;
}
