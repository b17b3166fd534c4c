import type { Course, PlatformUser, ReportingFilter, Result } from '../../src/platform/schemas.ts';
import { courses } from '../../src/sync/resources/courses.ts';
import { filters } from '../../src/sync/resources/filters.ts';
import { results } from '../../src/sync/resources/results.ts';
import { seats } from '../../src/sync/resources/seats.ts';
import { users } from '../../src/sync/resources/users.ts';
import type { LoadCounts } from '../../src/warehouse/load-counts.ts';
import { markMissingListing, upsertListing, type Listed, type ListingTable } from '../../src/warehouse/load-listing.ts';
import { insertReading } from '../../src/warehouse/load-reading.ts';
import type { OrgTx } from '../../src/warehouse/scope.ts';
import { markUnsighted, recordSightings as recordStagedSightings, upsertStaged, type UpsertStagedOptions } from '../../src/warehouse/load-staged.ts';

/**
 * The loaders of each resource as the tests call them: the generic loaders
 * (src/warehouse/load-listing.ts, load-staged.ts, load-reading.ts) driven by the
 * resource declarations (src/sync/resources/), under the names the per-resource loaders had.
 */

const listed = <T>(records: readonly T[]): Listed<T>[] => records.map((record) => ({ record, path: {} }));

function upsertOf<T>(table: ListingTable<T>) {
  return (tx: OrgTx, records: readonly T[], seenAt: Date): Promise<LoadCounts> => upsertListing(tx, table, listed(records), seenAt);
}

function markMissingOf<T>(table: ListingTable<T>) {
  return (tx: OrgTx, seenAt: Date): Promise<number> => markMissingListing(tx, table, seenAt);
}

export const upsertCourses: (tx: OrgTx, records: readonly Course[], seenAt: Date) => Promise<LoadCounts> = upsertOf(courses.table);
export const markMissingCourses = markMissingOf(courses.table);
export const upsertFilters: (tx: OrgTx, records: readonly ReportingFilter[], seenAt: Date) => Promise<LoadCounts> = upsertOf(filters.table);
export const markMissingFilters = markMissingOf(filters.table);
export const upsertUsers: (tx: OrgTx, records: readonly PlatformUser[], seenAt: Date) => Promise<LoadCounts> = upsertOf(users.table);
export const markMissingUsers = markMissingOf(users.table);

export function upsertResults(tx: OrgTx, records: readonly Result[], options: UpsertStagedOptions): Promise<LoadCounts> {
  return upsertStaged(tx, results.table, records, options);
}

export function recordSightings(tx: OrgTx, runId: number, resultIds: readonly string[]): Promise<void> {
  return recordStagedSightings(tx, results.table, runId, resultIds);
}

export function markUnseenResultsRemoved(tx: OrgTx, runId: number): Promise<number> {
  return markUnsighted(tx, results.table, runId);
}

export interface SeatObservation {
  observedAt: Date;
  seatsInUse: number | null;
  totalSeats: number | null;
  applicable: boolean;
}

export function insertSeatUsage(tx: OrgTx, observation: SeatObservation): Promise<void> {
  const reading = observation.applicable ? { seatsInUse: observation.seatsInUse ?? 0, totalSeats: observation.totalSeats ?? 0 } : undefined;
  return insertReading(tx, seats.table, observation.observedAt, reading);
}
