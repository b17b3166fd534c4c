/**
 * Types shared by the HR-feed readers (CSV and JSON Lines) and the planner.
 *
 * Glossary
 * - field:   one of the contract's HR-feed names (`employee_id`, `email`, …).
 * - column:  the header (CSV) or key (JSON Lines) a field is read from; equal to the
 *            field unless `--map field=Header` renames it.
 * - row:     one employee as the feed states it, validated.
 * - key:     what identifies an employee: `employee_id`, and the lower-cased e-mail.
 */

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
}

export type FeedRowErrorCode = 'invalid-value' | 'duplicate' | 'malformed-record' | 'invalid-json';

/** One problem with one row; the row is left out of the plan. */
export interface FeedRowError {
  file: string;
  line: number;
  code: FeedRowErrorCode;
  field?: FeedField;
  /** The offending value, cut to 60 characters. */
  value?: string;
  /** A full sentence: where, what is wrong, and the fix. */
  message: string;
}

export interface FeedReadResult {
  rows: FeedRow[];
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
}

export interface ReadFeedOptions {
  /** Default: by extension (`.jsonl`/`.ndjson` → jsonl, otherwise csv). */
  format?: FeedFormat;
  map?: ColumnMap;
}
