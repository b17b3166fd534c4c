import { JSON_ITEMS, type JsonItems } from '../../lib/json-stream.ts';
import { ChunkedColumn, uint32Column, uint8Column } from '../../lib/typed-column.ts';
import type { FeedAttributes, FeedRow, FeedRowList } from './types.ts';

/** Bits of a row's `flags`. */
const INACTIVE = 0b1;
const ADMIN = 0b10;

/**
 * A feed's valid rows, held by column: at 300,000 rows an object a row (twelve fields, its
 * properties out of line) was about 330 bytes; here a row is its two keys (the id and the
 * e-mail, about 80 bytes) and a pointer or a few bytes a field (docs/benchmarks.md, "A large
 * HR feed"). Values rows repeat (names, group lists, attribute sets) are one shared instance
 * already (collector.ts). A row is read back as the `FeedRow` it was, fields in the order
 * the reader wrote them, a new object each time; nothing changes a row once read.
 */
export class FeedRows implements FeedRowList, Iterable<FeedRow>, JsonItems {
  private count = 0;
  private readonly lines = uint32Column();
  private readonly flags = uint8Column();
  private readonly employeeIds = new ChunkedColumn<string>();
  private readonly emails = new ChunkedColumn<string>();
  /** The e-mail as written, when it differs from `emails` (most exports write them in lower case). */
  private readonly displays = new ChunkedColumn<string | undefined>();
  private readonly firstNames = new ChunkedColumn<string | null>();
  private readonly lastNames = new ChunkedColumn<string | null>();
  private readonly groups = new ChunkedColumn<string[]>();
  /** When it differs from the employee id (its default). */
  private readonly orgIds = new ChunkedColumn<string | undefined>();
  private readonly attributes = new ChunkedColumn<FeedAttributes | undefined>();
  private readonly platformUserIds = new ChunkedColumn<string | undefined>();

  static of(rows: Iterable<FeedRow>): FeedRows {
    const out = new FeedRows();
    for (const row of rows) out.push(row);
    return out;
  }

  get length(): number {
    return this.count;
  }

  push(row: FeedRow): void {
    const i = this.count;
    this.lines.push(row.line);
    this.flags.push((row.status === 'inactive' ? INACTIVE : 0) | (row.role === 'ADMIN' ? ADMIN : 0));
    this.employeeIds.push(row.employeeId);
    this.emails.push(row.email);
    this.displays.push(row.emailDisplay === row.email ? undefined : row.emailDisplay);
    this.firstNames.push(row.firstName);
    this.lastNames.push(row.lastName);
    this.groups.push(row.groups);
    this.orgIds.push(row.organisationIdentifier === row.employeeId ? undefined : row.organisationIdentifier);
    this.attributes.push(row.attributes);
    this.platformUserIds.push(row.platformUserId);
    this.count = i + 1;
  }

  lineAt(i: number): number {
    return this.lines.at(i);
  }

  employeeIdAt(i: number): string {
    return this.employeeIds.at(i);
  }

  emailAt(i: number): string {
    return this.emails.at(i);
  }

  isActiveAt(i: number): boolean {
    return (this.flags.at(i) & INACTIVE) === 0;
  }

  at(i: number): FeedRow | undefined {
    if (!Number.isInteger(i) || i < 0 || i >= this.count) return undefined;
    const flags = this.flags.at(i);
    const employeeId = this.employeeIds.at(i);
    const email = this.emails.at(i);
    // The collector's order: the line, then checkRecord's fields, then the attributes.
    const row: FeedRow = {
      line: this.lines.at(i),
      employeeId,
      email,
      emailDisplay: this.displays.at(i) ?? email,
      firstName: this.firstNames.at(i),
      lastName: this.lastNames.at(i),
      status: (flags & INACTIVE) === 0 ? 'active' : 'inactive',
      groups: this.groups.at(i),
      role: (flags & ADMIN) === 0 ? 'USER' : 'ADMIN',
      organisationIdentifier: this.orgIds.at(i) ?? employeeId,
    };
    const platformUserId = this.platformUserIds.at(i);
    if (platformUserId !== undefined) row.platformUserId = platformUserId;
    const attributes = this.attributes.at(i);
    if (attributes !== undefined) row.attributes = attributes;
    return row;
  }

  *[Symbol.iterator](): IterableIterator<FeedRow> {
    for (let i = 0; i < this.count; i += 1) yield this.at(i)!;
  }

  map<T>(fn: (row: FeedRow, index: number) => T): T[] {
    const out = new Array<T>(this.count);
    for (let i = 0; i < this.count; i += 1) out[i] = fn(this.at(i)!, i);
    return out;
  }

  filter(fn: (row: FeedRow, index: number) => boolean): FeedRow[] {
    const out: FeedRow[] = [];
    for (let i = 0; i < this.count; i += 1) {
      const row = this.at(i)!;
      if (fn(row, i)) out.push(row);
    }
    return out;
  }

  slice(start = 0, end = this.count): FeedRow[] {
    const out: FeedRow[] = [];
    for (let i = Math.max(0, start); i < Math.min(end, this.count); i += 1) out.push(this.at(i)!);
    return out;
  }

  /** JSON shows the rows as an array, as it did when they were one. */
  toJSON(): FeedRow[] {
    return this.slice();
  }

  /** Written one row at a time (lib/json-stream.ts), the same text as toJSON's. */
  [JSON_ITEMS](): Iterable<FeedRow> {
    return this;
  }

  /** Keeps the rows `keep` accepts (by position), in order, in place: a feed's duplicates leave without a copy of the rest. */
  retain(keep: (i: number) => boolean): void {
    let to = 0;
    const columns = this.pointerColumns();
    for (let from = 0; from < this.count; from += 1) {
      if (!keep(from)) continue;
      this.lines.set(to, this.lines.at(from));
      this.flags.set(to, this.flags.at(from));
      for (const column of columns) column.set(to, column.at(from));
      to += 1;
    }
    for (const column of columns) column.truncate(to);
    this.lines.truncate(to);
    this.flags.truncate(to);
    this.count = to;
  }

  private pointerColumns(): ChunkedColumn<unknown>[] {
    return [this.employeeIds, this.emails, this.displays, this.firstNames, this.lastNames, this.groups, this.orgIds, this.attributes, this.platformUserIds];
  }

  /** No rows (a feed whose file could not be read plans nothing). */
  clear(): void {
    this.retain(() => false);
  }

}
