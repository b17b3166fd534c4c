import type { AttributeSelection } from './types.ts';

/** A selection as `[attribute name, column]` pairs; `all` and `none` as they are. */
export function attributePairs(selection: AttributeSelection | undefined): 'all' | 'none' | [string, string][] {
  if (selection === undefined || selection === 'all') return 'all';
  if (selection === 'none') return 'none';
  if (Array.isArray(selection)) return (selection as readonly string[]).map((column) => [column, column]);
  return Object.entries(selection as Readonly<Record<string, string>>);
}
