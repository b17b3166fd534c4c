/**
 * Types shared by the HR-feed readers (CSV and JSON Lines) and the planner.
 *
 * Glossary
 * - field:   one of the contract's HR-feed names (`employee_id`, `email`, …).
 * - column:  the header (CSV) or key (JSON Lines) a field is read from; equal to the
 *            field unless `--map field=Header` renames it.
 * - row:     one employee as the feed states it, validated.
 * - key:     what identifies an employee: `employee_id`, and the lower-cased e-mail.
 * - attribute: a column that is not read as a field (department, manager…), kept as
 *            HR data for the warehouse (`training.employees.attributes`).
 * - profile: a JSON file holding how one HR system's export is read (see profile.ts).
 */
import type { EncodingSource, FeedEncoding } from './lines.ts';

/** The contract's HR-feed fields, in the order a report lists them. */
export const FEED_FIELDS = [
  'employee_id',
  'email',
  'first_name',
  'last_name',
  'status',
  'groups',
  'role',
  'organisation_identifier',
  'platform_user_id',
] as const;
export type FeedField = (typeof FEED_FIELDS)[number];

/** Fields every header must provide; names are checked later, by the planner, for joiners only. */
export const REQUIRED_FEED_FIELDS: readonly FeedField[] = ['employee_id', 'email'];

/** field → the column it is read from (only the renamed ones). */
export type ColumnMap = ReadonlyMap<FeedField, string>;

export type FeedFormat = 'csv' | 'jsonl';
/** The separators a CSV header is searched for; `\t` is a tab. */
export const FEED_DELIMITERS = [',', ';', '\t', '|'] as const;
export type FeedDelimiter = (typeof FEED_DELIMITERS)[number];

/** A JSON value, as an attribute holds it (CSV gives text; JSON Lines any value). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type FeedAttributes = Record<string, JsonValue>;

/** Status words of an export (normalised: lower case, no spacing) → what they mean. */
export type StatusMap = ReadonlyMap<string, FeedStatus>;

/** An employee whose end date lies before today (UTC) is inactive, whatever the status column says. */
export interface LeaverRule {
  /** The header (CSV) or key (JSON Lines) holding the end date. */
  column: string;
  /** e.g. `d-M-yyyy`, `yyyy-MM-dd`, `dd/MM/yyyy` (see date-format.ts). */
  dateFormat: string;
}

/**
 * Which columns that are not fields become attributes: all (default, named as the
 * header), none, the listed headers, or `{attribute name: header}` (stable names for
 * reports, whatever the export calls its columns).
 */
export type AttributeSelection = 'all' | 'none' | readonly string[] | Readonly<Record<string, string>>;
export type FeedStatus = 'active' | 'inactive';
export type FeedRole = 'USER' | 'ADMIN';

/** One valid feed row. */
export interface FeedRow {
  /** 1-based line where the record starts in the file. */
  line: number;
  employeeId: string;
  /** Lower case: the identity key compared with the applied state. */
  email: string;
  /** As the HR export wrote it (trimmed): what is sent to the platform and shown. */
  emailDisplay: string;
  /** null when the feed leaves it empty; required only when the employee must be created. */
  firstName: string | null;
  lastName: string | null;
  status: FeedStatus;
  /** Normalised (lower-case) group GUIDs, de-duplicated and sorted. */
  groups: string[];
  role: FeedRole;
  organisationIdentifier: string;
  platformUserId?: string;
  /** The kept columns that are not fields (absent when there are none). */
  attributes?: FeedAttributes;
}

/**
 * Rows as the planner, the guards and the warehouse read them: an array (a SCIM batch, the
 * snapshot), or a feed's rows held by column (rows.ts). Read in order, never changed.
 */
export interface RowList extends Iterable<FeedRow> {
  readonly length: number;
  map<T>(fn: (row: FeedRow, index: number) => T): T[];
  filter(fn: (row: FeedRow, index: number) => boolean): FeedRow[];
}

/** A feed's valid rows (rows.ts holds a read feed's by column; an array is one too). */
export interface FeedRowList extends RowList {
  at(index: number): FeedRow | undefined;
  slice(start?: number, end?: number): FeedRow[];
}

export type FeedRowErrorCode = 'invalid-value' | 'duplicate' | 'malformed-record' | 'invalid-json';

/** What a row error points at: a field, or `end_date` (the leaver rule's column). */
export type FeedErrorField = FeedField | 'end_date';

/** One problem with one row; the row is left out of the plan. */
export interface FeedRowError {
  file: string;
  line: number;
  code: FeedRowErrorCode;
  field?: FeedErrorField;
  /** The offending value, cut to 60 characters. */
  value?: string;
  /** A full sentence: where, what is wrong, and the fix. */
  message: string;
}

export interface FeedReadResult {
  /** In file order; held by column (rows.ts). */
  rows: FeedRowList;
  /** Sorted by line. */
  errors: FeedRowError[];
  /**
   * Problems with the whole file (unreadable, bytes that do not decode, a quote never
   * closed, header without a required field): `rows` is empty and nothing may be applied.
   */
  fileErrors: string[];
  /** sha256 (hex) of the file's bytes, as stored (before decoding). */
  hash: string;
  lineCount: number;
  /** Keys of rows that failed validation, so the planner never takes them for leavers. */
  invalidEmployeeIds: Set<string>;
  /** Lower case. */
  invalidEmails: Set<string>;
  /**
   * Set when only the first rows were kept (readFeedSummary, for `feed check`): the counts of
   * every valid row. The key sets then lack the other key of a row left out as a duplicate.
   */
  totals?: { valid: number; active: number };
  /** How the file was read (set by readFeed; for `feed check` and reports). */
  reading?: FeedReading;
}

/** How a feed was read: what was given or detected. */
export interface FeedReading {
  format: FeedFormat;
  /** CSV only: the separator used, and whether it was detected from the header line. */
  delimiter?: FeedDelimiter;
  delimiterDetected?: boolean;
  /** undefined when the file could not be opened. */
  encoding?: FeedEncoding;
  /** How `encoding` was chosen: the file's byte-order mark, the default (UTF-8), or the profile. */
  encodingSource?: EncodingSource;
  /** field → column, for every field read from a column other than its own name. */
  map: ColumnMap;
  /** CSV: the attributes kept, and the header column of each. JSON Lines: undefined (keys vary by line). */
  attributes?: { name: string; column: string }[];
}

/** Bytes of the file read so far, of its size; called every chunk (64 KiB). */
export type FeedReadProgress = (bytesRead: number, records: number) => void;

export interface ReadFeedOptions {
  /** Progress of the read (a terminal shows it; see commands/render/feed-progress.ts). */
  onProgress?: FeedReadProgress | undefined;
  /** Default: by extension (`.jsonl`/`.ndjson` → jsonl, otherwise csv). */
  format?: FeedFormat;
  map?: ColumnMap;
  /** CSV only. Default: detected from the header line among `,` `;` tab `|`. */
  delimiter?: FeedDelimiter;
  /** Encoding of a file without a byte-order mark (default UTF-8); a BOM always wins. */
  encoding?: FeedEncoding;
  /** Extra status words, on top of the built-in ones (which they override). */
  statusMap?: StatusMap;
  leaverRule?: LeaverRule;
  /** Default `all`. */
  attributes?: AttributeSelection;
  /** Today as a UTC calendar day `YYYY-MM-DD`, for the leaver rule; default the current one. */
  today?: string;
}
