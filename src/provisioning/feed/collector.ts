import { attributePairs } from './attributes.ts';
import { describeField } from './columns.ts';
import type { DateFormat } from './date-format.ts';
import { checkRecord, readableKeys, type FeedRecord } from './row.ts';
import { mapStatusWord } from './status-words.ts';
import type { AttributeSelection, ColumnMap, FeedAttributes, FeedField, FeedReadResult, FeedRow, FeedRowError, JsonValue, StatusMap } from './types.ts';

const FIX_VALUE = 'fix the value in the HR export or drop the row';

/** What a profile adds to reading a row: status words, the end-date rule, the attributes kept. */
export interface FeedRules {
  statusMap?: StatusMap | undefined;
  leaver?: { column: string; format: DateFormat; today: string } | undefined;
  /** Default all. */
  attributes?: AttributeSelection | undefined;
}

/** The columns of a record that are not fields (header or key → value). */
export type RecordExtras = Readonly<Record<string, JsonValue>>;
const NO_EXTRAS: RecordExtras = Object.freeze({});

type EndDateCheck = { ok: true; past: boolean } | { ok: false; value: string; reason: string };

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

  private readonly keep: 'all' | 'none' | [string, string][];

  constructor(
    private readonly file: string,
    private readonly map: ColumnMap | undefined,
    private readonly rules: FeedRules = {},
  ) {
    this.keep = attributePairs(rules.attributes);
  }

  get hasFileErrors(): boolean {
    return this.fileErrors.length > 0;
  }

  /**
   * One record, keyed by feed field, with the columns that are not fields (`extras`):
   * the leaver rule's end date is read from them, and the kept ones become attributes.
   */
  add(line: number, record: FeedRecord, extras: RecordExtras = NO_EXTRAS): void {
    const word = mapStatusWord(this.rules.statusMap, record.status);
    const checked = checkRecord(word === undefined ? record : { ...record, status: word });
    const end = this.endDate(extras);
    if (checked.ok && end.ok) {
      const row: FeedRow = { line, ...checked.row };
      if (end.past) row.status = 'inactive';
      const attributes = this.attributesOf(extras);
      if (attributes !== undefined) row.attributes = attributes;
      this.rows.push(row);
      note(this.ids, row.employeeId, line);
      note(this.emails, row.email, line);
      return;
    }
    if (!end.ok) {
      const leaver = this.rules.leaver!;
      this.errors.push({
        file: this.file,
        line,
        code: 'invalid-value',
        field: 'end_date',
        value: end.value.slice(0, 60),
        message: `${this.file} line ${line}, field end_date (column ${JSON.stringify(leaver.column)}): ${end.reason}; fix the date in the HR export (or the profile's "leaverRule.dateFormat") or drop the row`,
      });
    }
    for (const p of checked.ok ? [] : checked.problems) {
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

  /** The leaver rule: an end date before today makes the employee inactive; today or later changes nothing. */
  private endDate(extras: RecordExtras): EndDateCheck {
    const leaver = this.rules.leaver;
    if (leaver === undefined) return { ok: true, past: false };
    const raw = Object.hasOwn(extras, leaver.column) ? extras[leaver.column] : undefined;
    if (raw === undefined || raw === null) return { ok: true, past: false };
    const text = typeof raw === 'string' ? raw.trim() : typeof raw === 'number' ? String(raw) : JSON.stringify(raw);
    if (text === '') return { ok: true, past: false };
    const day = leaver.format.parse(text);
    if (day === undefined) {
      const shown = JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
      return { ok: false, value: text, reason: `${shown} is not a date written ${leaver.format.pattern} (e.g. ${leaver.format.example}), or names a day that does not exist` };
    }
    return { ok: true, past: day < leaver.today };
  }

  private attributesOf(extras: RecordExtras): FeedAttributes | undefined {
    if (this.keep === 'none' || extras === NO_EXTRAS) return undefined;
    const kept: [string, JsonValue][] =
      this.keep === 'all' ? Object.entries(extras) : this.keep.filter(([, column]) => Object.hasOwn(extras, column)).map(([name, column]) => [name, extras[column]!]);
    // fromEntries defines own keys, so a column named "__proto__" is data, not a prototype.
    return kept.length === 0 ? undefined : Object.fromEntries(kept);
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
