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

/** Zero counts, to sum into. */
export function emptyCounts(): LoadCounts {
  return { inserted: 0, updated: 0, unchanged: 0 };
}

/** Adds `b` into a copy of `a`. */
export function addCounts(a: LoadCounts, b: LoadCounts): LoadCounts {
  return { inserted: a.inserted + b.inserted, updated: a.updated + b.updated, unchanged: a.unchanged + b.unchanged };
}

/** Keeps the last record for each id: pages shift while paging, so an id can repeat. */
export function dedupeById<T>(records: readonly T[], id: (record: T) => string): T[] {
  const byId = new Map<string, T>();
  for (const record of records) byId.set(id(record), record);
  return [...byId.values()];
}
