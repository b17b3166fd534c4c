import { uint32Column, uint8Column } from '../../lib/typed-column.ts';
import { attributePairs } from './attributes.ts';
import { describeField } from './columns.ts';
import type { DateFormat } from './date-format.ts';
import { checkRecord, readableKeys, type FeedRecord } from './row.ts';
import { DuplicateKeys } from './duplicate-keys.ts';
import { FeedRows } from './rows.ts';
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

/**
 * Which valid rows a collector keeps. Default all (the plan needs them). `feed check` keeps
 * only the first `rows` (and counts the rest), so a 300,000-row feed is read in bounded
 * memory; `skip` names lines a first pass found to be duplicates, so a second pass keeps the
 * right first rows.
 */
export interface KeepRows {
  rows: number;
  skip?: ReadonlySet<number> | undefined;
}

/** Most distinct names, group lists and attribute sets shared between rows (see `share`). */
const SHARED_MAX = 100_000;

/**
 * Gathers the records a reader parses, in file order, and turns them into the read
 * result: validation per record, then duplicate keys across the whole feed.
 */
export class FeedCollector {
  private readonly rows = new FeedRows();
  private readonly errors: FeedRowError[] = [];
  private readonly fileErrors: string[] = [];
  /** The lines of each employee_id and e-mail, for the duplicate rule. */
  private readonly ids = new DuplicateKeys((row) => this.rows.employeeIdAt(row));
  private readonly emails = new DuplicateKeys((row) => this.rows.emailAt(row));
  private readonly invalidEmployeeIds = new Set<string>();
  private readonly invalidEmails = new Set<string>();

  private readonly keep: 'all' | 'none' | [string, string][];
  /** With `keepRows`: line and status (1 active) of every valid row, for the counts; the rows themselves are not held. */
  private readonly validLines = uint32Column();
  private readonly validActive = uint8Column();
  /**
   * Values many rows repeat (first and last names, group lists, attribute sets), held once:
   * at 300,000 rows a copy per row is most of the memory a feed takes.
   */
  private readonly shared = new Map<string, unknown>();
  private dropped: ReadonlySet<number> = new Set();
  private records = 0;

  constructor(
    private readonly file: string,
    private readonly map: ColumnMap | undefined,
    private readonly rules: FeedRules = {},
    private readonly keepRows?: KeepRows,
  ) {
    this.keep = attributePairs(rules.attributes);
  }

  /** Records read so far, valid or not (for progress). */
  get recordCount(): number {
    return this.records;
  }

  /** Lines left out as duplicates (known after `finish`). */
  get droppedLines(): ReadonlySet<number> {
    return this.dropped;
  }

  /** One instance of a value equal rows share; read-only by contract (rows are never changed after reading). */
  private share<T>(key: string, value: T): T {
    const seen = this.shared.get(key);
    if (seen !== undefined) return seen as T;
    if (this.shared.size < SHARED_MAX) this.shared.set(key, value);
    return value;
  }

  private compact(row: FeedRow): FeedRow {
    if (row.emailDisplay === row.email) row.emailDisplay = row.email;
    if (row.organisationIdentifier === row.employeeId) row.organisationIdentifier = row.employeeId;
    if (row.firstName !== null) row.firstName = this.share(`n${row.firstName}`, row.firstName);
    if (row.lastName !== null) row.lastName = this.share(`n${row.lastName}`, row.lastName);
    row.groups = this.share(`g${row.groups.join(';')}`, row.groups);
    if (row.attributes !== undefined) row.attributes = this.share(`a${JSON.stringify(Object.entries(row.attributes))}`, row.attributes);
    return row;
  }

  get hasFileErrors(): boolean {
    return this.fileErrors.length > 0;
  }

  /**
   * One record, keyed by feed field, with the columns that are not fields (`extras`):
   * the leaver rule's end date is read from them, and the kept ones become attributes.
   */
  add(line: number, record: FeedRecord, extras: RecordExtras = NO_EXTRAS): void {
    this.records += 1;
    const word = mapStatusWord(this.rules.statusMap, record.status);
    const checked = checkRecord(word === undefined ? record : { ...record, status: word });
    const end = this.endDate(extras);
    if (checked.ok && end.ok) {
      const row: FeedRow = { line, ...checked.row };
      if (end.past) row.status = 'inactive';
      const attributes = this.attributesOf(extras);
      if (attributes !== undefined) row.attributes = attributes;
      if (this.keepRows === undefined) {
        // The row is held: the duplicate index reads its keys from it.
        const held = this.rows.length;
        this.rows.push(this.compact(row));
        this.ids.noteRow(held, row.employeeId, line);
        this.emails.noteRow(held, row.email, line);
        return;
      }
      this.validLines.push(line);
      this.validActive.push(row.status === 'active' ? 1 : 0);
      if (this.rows.length < this.keepRows.rows && !this.keepRows.skip?.has(line)) this.rows.push(row);
      this.ids.note(row.employeeId, line);
      this.emails.note(row.email, line);
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
    this.records += 1;
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
      this.ids.note(keys.employeeId, line);
    }
    if (keys.email !== undefined) {
      this.invalidEmails.add(keys.email);
      this.emails.note(keys.email, line);
    }
  }

  /** Applies the duplicate rule (every row sharing a key is an error) and returns the result. */
  finish(hash: string, lineCount: number): FeedReadResult {
    const dropped = new Set<number>();
    this.duplicates(this.ids, 'employee_id', dropped, this.invalidEmployeeIds);
    this.duplicates(this.emails, 'email', dropped, this.invalidEmails);
    const rows = this.rows;
    if (dropped.size > 0) {
      for (let i = 0; i < rows.length; i += 1) {
        if (!dropped.has(rows.lineAt(i))) continue;
        this.invalidEmployeeIds.add(rows.employeeIdAt(i));
        this.invalidEmails.add(rows.emailAt(i));
      }
      rows.retain((i) => !dropped.has(rows.lineAt(i)));
    }
    if (this.fileErrors.length > 0) rows.clear();
    this.dropped = dropped;
    this.errors.sort((a, b) => a.line - b.line);
    return {
      rows,
      ...(this.keepRows === undefined ? {} : { totals: this.totals(dropped) }),
      errors: this.errors,
      fileErrors: this.fileErrors,
      hash,
      lineCount,
      invalidEmployeeIds: this.invalidEmployeeIds,
      invalidEmails: this.invalidEmails,
    };
  }

  /** Valid and active rows, every row counted (with `keepRows`, where only the first are held). */
  private totals(dropped: ReadonlySet<number>): { valid: number; active: number } {
    if (this.fileErrors.length > 0) return { valid: 0, active: 0 };
    let valid = 0;
    let active = 0;
    for (let i = 0; i < this.validLines.length; i += 1) {
      if (dropped.has(this.validLines.at(i))) continue;
      valid += 1;
      active += this.validActive.at(i);
    }
    return { valid, active };
  }

  private duplicates(index: DuplicateKeys, field: FeedField, dropped: Set<number>, invalid: Set<string>): void {
    for (const [key, lines] of index.duplicates()) {
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
