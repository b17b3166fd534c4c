import type { OrgTx } from './scope.ts';

/**
 * The generic loader of a reading resource (seats): one row per run, keyed (org, the
 * instant it was read), described by a resource declaration (src/sync/resources/).
 */
export interface ReadingTable<T> {
  /** Schema-qualified name, a trusted identifier from our code. */
  table: string;
  /** The key column: the instant of the reading (timestamptz). */
  key: string;
  /** The other columns, in order. */
  columns: readonly string[];
  /** The row of a reading (undefined: the platform answered that it has none, e.g. "not applicable"): the key's value is added. */
  row(reading: T | undefined): Record<string, unknown>;
}

/** Records one reading of the organisation; a second one at the same instant replaces it. */
export async function insertReading<T>({ client, org }: OrgTx, spec: ReadingTable<T>, readAt: Date, reading: T | undefined): Promise<void> {
  const row = spec.row(reading);
  const { columns } = spec;
  await client.query(
    `insert into ${spec.table} (org, ${spec.key}, ${columns.join(', ')})
     values ($${columns.length + 2}, $1, ${columns.map((_c, i) => `$${i + 2}`).join(', ')})
     on conflict (org, ${spec.key}) do update set
       ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}`,
    [readAt, ...columns.map((c) => row[c]), org],
  );
}
