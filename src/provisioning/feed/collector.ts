import { describeField } from './columns.ts';
import { checkRecord, readableKeys, type FeedRecord } from './row.ts';
import type { ColumnMap, FeedField, FeedReadResult, FeedRow, FeedRowError } from './types.ts';

const FIX_VALUE = 'fix the value in the HR export or drop the row';

/** Lines per key; a number until a second line turns up, to keep 50,000 keys cheap. */
type KeyLines = Map<string, number | number[]>;

function note(index: KeyLines, key: string, line: number): void {
  const seen = index.get(key);
  if (seen === undefined) index.set(key, line);
  else if (typeof seen === 'number') index.set(key, [seen, line]);
  else seen.push(line);
}

/**
 * Gathers the records a reader parses, in file order, and turns them into the read
 * result: validation per record, then duplicate keys across the whole feed.
 */
export class FeedCollector {
  private readonly rows: FeedRow[] = [];
  private readonly errors: FeedRowError[] = [];
  private readonly fileErrors: string[] = [];
  private readonly ids: KeyLines = new Map();
  private readonly emails: KeyLines = new Map();
  private readonly invalidEmployeeIds = new Set<string>();
  private readonly invalidEmails = new Set<string>();

  constructor(
    private readonly file: string,
    private readonly map: ColumnMap | undefined,
  ) {}

  get hasFileErrors(): boolean {
    return this.fileErrors.length > 0;
  }

  /** One record, keyed by feed field. */
  add(line: number, record: FeedRecord): void {
    const checked = checkRecord(record);
    if (checked.ok) {
      this.rows.push({ line, ...checked.row });
      note(this.ids, checked.row.employeeId, line);
      note(this.emails, checked.row.email, line);
      return;
    }
    for (const p of checked.problems) {
      this.errors.push({
        file: this.file,
        line,
        code: 'invalid-value',
        field: p.field,
        ...(p.value === undefined ? {} : { value: p.value }),
        message: `${this.file} line ${line}, field ${describeField(p.field, this.map)}: ${p.reason}; ${FIX_VALUE}`,
      });
    }
    this.invalid(line, record);
  }

  /** A record the parser could not read whole; `partial` holds whatever fields it did read. */
  malformed(line: number, reason: string, partial: FeedRecord = {}, code: 'malformed-record' | 'invalid-json' = 'malformed-record'): void {
    this.errors.push({ file: this.file, line, code, message: `${this.file} line ${line}: ${reason}` });
    this.invalid(line, partial);
  }

  /** A problem with the whole file (header, encoding, unclosed quote): no row is returned, so nothing is planned. */
  fileError(message: string): void {
    this.fileErrors.push(message);
  }

  private invalid(line: number, record: FeedRecord): void {
    const keys = readableKeys(record);
    if (keys.employeeId !== undefined) {
      this.invalidEmployeeIds.add(keys.employeeId);
      note(this.ids, keys.employeeId, line);
    }
    if (keys.email !== undefined) {
      this.invalidEmails.add(keys.email);
      note(this.emails, keys.email, line);
    }
  }

  /** Applies the duplicate rule (every row sharing a key is an error) and returns the result. */
  finish(hash: string, lineCount: number): FeedReadResult {
    const dropped = new Set<number>();
    this.duplicates(this.ids, 'employee_id', dropped, this.invalidEmployeeIds);
    this.duplicates(this.emails, 'email', dropped, this.invalidEmails);
    let rows = this.rows;
    if (dropped.size > 0) {
      rows = rows.filter((row) => !dropped.has(row.line));
      for (const row of this.rows) {
        if (!dropped.has(row.line)) continue;
        this.invalidEmployeeIds.add(row.employeeId);
        this.invalidEmails.add(row.email);
      }
    }
    if (this.fileErrors.length > 0) rows = [];
    this.errors.sort((a, b) => a.line - b.line);
    return {
      rows,
      errors: this.errors,
      fileErrors: this.fileErrors,
      hash,
      lineCount,
      invalidEmployeeIds: this.invalidEmployeeIds,
      invalidEmails: this.invalidEmails,
    };
  }

  private duplicates(index: KeyLines, field: FeedField, dropped: Set<number>, invalid: Set<string>): void {
    for (const [key, lines] of index) {
      if (typeof lines === 'number') continue;
      invalid.add(key);
      for (const line of lines) {
        dropped.add(line);
        const others = lines.filter((l) => l !== line);
        this.errors.push({
          file: this.file,
          line,
          code: 'duplicate',
          field,
          value: key.slice(0, 60),
          message:
            `${this.file} line ${line}, field ${describeField(field, this.map)}: ${JSON.stringify(key)} appears also on line${others.length > 1 ? 's' : ''} ${others.join(', ')}; ` +
            'every row involved is left out; keep one row per employee in the HR export',
        });
      }
    }
  }
}
