/**
 * What one load did, counted over distinct ids of the batch (a record listed twice
 * in one batch counts once): `inserted` new rows, `updated` rows whose data changed
 * or that came back after being marked removed, `unchanged` the rest.
 */
export interface LoadCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

/** Keeps the last record for each id: pages shift while paging, so an id can repeat. */
export function dedupeById<T>(records: readonly T[], id: (record: T) => string): T[] {
  const byId = new Map<string, T>();
  for (const record of records) byId.set(id(record), record);
  return [...byId.values()];
}
