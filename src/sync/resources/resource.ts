import type { Endpoint, ListRequest, Listing } from '../../platform/types.ts';
import type { ListingTable } from '../../warehouse/load-listing.ts';
import type { ReadingTable } from '../../warehouse/load-reading.ts';
import type { StagedTable } from '../../warehouse/load-staged.ts';

/**
 * A synced resource, declared once (one file beside this one): where the platform lists
 * it and how it pages, its schema (and the fast check in front of it), its warehouse
 * table, columns, key and the mapping from record to row, and how it is synced. Its job
 * (`sync-<name>`, jobs/index.ts), the `sync` command's resources, the schedules
 * (`TRAINSYNC_CRON_<NAME>`) and the metrics come from it through the catalog; the
 * engines (snapshot.ts, reading.ts, results/) and the generic client and loaders read
 * it. The table itself is a migration (sql/migrations/); a row type in
 * ./tables.ts is needed only where something reads the table through Kysely.
 */
interface Declared {
  /** `sync <name>`; its job is `sync-<name>`, its schedule TRAINSYNC_CRON_<NAME> (uppercase, `-` as `_`). */
  name: string;
  /** The default schedule (cron, UTC). */
  cron: string;
}

/**
 * Read whole every run in one transaction; rows a complete listing leaves out are
 * marked removed (src/sync/snapshot.ts).
 */
export interface SnapshotResource<T> extends Declared {
  kind: 'snapshot';
  endpoint: Listing<T>;
  /**
   * A list per parent (`results/group/{groupId}`): listed once for each key of the
   * parent's table not marked removed, that key as the path value `param`. Sync the
   * parent first (jobs/index.ts order).
   */
  each?: { parent: { table: Pick<ListingTable<never>, 'table' | 'key'> }; param: string } | undefined;
  table: ListingTable<T>;
  /**
   * Set for an endpoint a platform may not offer (404/405/501): the run then succeeds
   * with the note this returns instead of failing, e.g. "not available".
   */
  whenNotOffered?: ((status: number) => string) | undefined;
}

/**
 * Read in date windows from a watermark (with a lookback), the whole list on a first run
 * and with `--full`, or the days of `--since/--until`; every read proven complete by the
 * completeness rule (src/sync/results/).
 */
export interface WindowedResource<T> extends Declared {
  kind: 'windowed';
  /** Paged by number: the walk chooses its pages (completeness.ts). */
  endpoint: Listing<T>;
  table: StagedTable<T>;
  /**
   * The request of a window's bounds (windowQuery in results/days.ts), of the records dated
   * from an instant on (`startDate` alone), and of the whole list (no bounds).
   */
  request(bounds: { startDate: string; endDate?: string | undefined } | undefined): ListRequest;
  /** The instant that places a record on a day (a backfill stores only its days), or null. */
  day(record: T): string | null;
  /** A record's key (what the table's key column holds). */
  key(record: T): string;
  /** The key of a record set aside, from its raw JSON, if it has a readable one (it still exists: never marked removed). */
  rawKey(raw: unknown): string | undefined;
  /** `day` of a record set aside, from its raw JSON: undefined when it cannot be told. */
  rawDay(raw: unknown): string | null | undefined;
}

/** One reading per run, kept as a row of its own (seats). */
export interface ReadingResource<T> extends Declared {
  kind: 'reading';
  endpoint: Endpoint<T>;
  table: ReadingTable<T>;
  /** A documented 400 code meaning "nothing to read here": a row without a reading, and the run's note. */
  unavailable?: { code: string; note: string } | undefined;
}

export type Resource<T> = SnapshotResource<T> | WindowedResource<T> | ReadingResource<T>;
