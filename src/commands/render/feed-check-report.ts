import { delimiterName } from '../../provisioning/feed/delimiter.ts';
import { encodingName, type EncodingSource, type FeedEncoding } from '../../provisioning/feed/lines.ts';
import { fitTable } from './fit-table.ts';
import type { FeedErrorField, FeedReadResult, FeedRow, FeedRowErrorCode } from '../../provisioning/feed/types.ts';

/** What `trainsync feed check` shows: how the feed reads, without doing anything with it. */
export interface FeedCheckReport {
  file: string;
  profile: string | null;
  reading: {
    format: string;
    /** `,` `;` `\t` `|`; null for JSON Lines. */
    delimiter: string | null;
    delimiterDetected: boolean;
    /** The encoding the file was read with (utf-8, windows-1252, …); null when it could not be opened. */
    encoding: FeedEncoding | null;
    /** How it was chosen: the file's byte-order mark, the default (UTF-8), or the profile's "encoding". */
    encodingSource: EncodingSource | null;
    /** field → column, for fields read from another column than their own name. */
    columns: Record<string, string>;
    /** CSV: the attributes kept and their columns; null for JSON Lines (keys vary by line). */
    attributes: { name: string; column: string }[] | null;
  };
  counts: {
    lines: number;
    /** Records read (valid plus rejected). */
    records: number;
    valid: number;
    rejected: number;
    active: number;
    inactive: number;
  };
  fileErrors: string[];
  /** Readable, but probably not what was meant (a header with no rows). */
  warnings: string[];
  errors: { line: number; field: FeedErrorField | null; code: FeedRowErrorCode; value: string | null; message: string }[];
  /** The first valid rows, as they would be planned and stored. */
  rows: FeedRow[];
}

export function feedCheckReport(feed: FeedReadResult, options: { file: string; profile?: string | undefined; rows: number }): FeedCheckReport {
  const rejectedLines = new Set(feed.errors.map((e) => e.line));
  // readFeedSummary holds only the first rows and counts them all.
  const valid = feed.totals?.valid ?? feed.rows.length;
  const active = feed.totals?.active ?? feed.rows.filter((r) => r.status === 'active').length;
  const reading = feed.reading;
  return {
    file: options.file,
    profile: options.profile ?? null,
    reading: {
      format: reading?.format ?? 'csv',
      delimiter: reading?.delimiter ?? null,
      delimiterDetected: reading?.delimiterDetected ?? false,
      encoding: reading?.encoding ?? null,
      encodingSource: reading?.encodingSource ?? null,
      columns: Object.fromEntries(reading?.map ?? []),
      attributes: reading?.attributes ?? null,
    },
    counts: {
      lines: feed.lineCount,
      records: valid + rejectedLines.size,
      valid,
      rejected: rejectedLines.size,
      active,
      inactive: valid - active,
    },
    fileErrors: feed.fileErrors,
    warnings:
      feed.fileErrors.length === 0 && valid + rejectedLines.size === 0
        ? ['the feed has no rows, only a header: in full mode every employee would be a leaver (the disable limit refuses that plan); is this the right export?']
        : [],
    errors: feed.errors.map((e) => ({ line: e.line, field: e.field ?? null, code: e.code, value: e.value ?? null, message: e.message })),
    rows: feed.rows.slice(0, options.rows),
  };
}

/** 0 every row reads; 1 rows were rejected; 2 the file cannot be read at all. */
export function feedCheckExitCode(report: FeedCheckReport): number {
  if (report.fileErrors.length > 0) return 2;
  return report.errors.length > 0 ? 1 : 0;
}

function attributesText(row: FeedRow): string {
  if (row.attributes === undefined) return '';
  return Object.entries(row.attributes)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('; ');
}

const ERRORS_SHOWN = 20;

const ENCODING_SOURCES: Record<EncodingSource, string> = { bom: 'its byte-order mark', default: 'the default', profile: 'the profile\'s "encoding"' };

/** The report as text: how the file was read, counts, errors (file, line, field, fix), then the first rows. */
export function formatFeedCheck(report: FeedCheckReport, options: { width?: number } = {}): string {
  const r = report.reading;
  const how = [r.format];
  if (r.delimiter !== null) how.push(`delimiter ${delimiterName(r.delimiter)}${r.delimiterDetected ? ' (detected)' : ''}`);
  if (r.encoding !== null) how.push(`read as ${encodingName(r.encoding)}${r.encodingSource === null ? '' : ` (${ENCODING_SOURCES[r.encodingSource]})`}`);
  const lines = [`${report.file}${report.profile ? ` (profile ${report.profile})` : ''}: ${how.join(', ')}, ${report.counts.lines} lines`];
  const mapped = Object.entries(r.columns).map(([field, column]) => `${field} ← ${JSON.stringify(column)}`);
  if (mapped.length > 0) lines.push(`columns: ${mapped.join(', ')}`);
  if (r.attributes !== null) {
    const kept = r.attributes.map((a) => (a.name === a.column ? a.name : `${a.name} ← ${JSON.stringify(a.column)}`));
    lines.push(`attributes kept: ${kept.length > 0 ? kept.join(', ') : '(none)'}`);
  }
  const c = report.counts;
  lines.push(`records: ${c.records}; valid: ${c.valid} (${c.active} active, ${c.inactive} inactive); rejected: ${c.rejected}`);
  for (const e of report.fileErrors) lines.push(`FILE ERROR: ${e}`);
  for (const w of report.warnings) lines.push(`WARNING: ${w}`);
  for (const e of report.errors.slice(0, ERRORS_SHOWN)) lines.push(`row error: ${e.message}`);
  if (report.errors.length > ERRORS_SHOWN) lines.push(`row error: … and ${report.errors.length - ERRORS_SHOWN} more (see --json)`);
  if (report.rows.length > 0) {
    // Seven columns: too wide, the id column gives way first (its head wraps), then the name, then the e-mail.
    const head = ['line', 'employee_id', 'email', 'name', 'status', 'role', 'groups'];
    const rows = report.rows.map((row) => [row.line, row.employeeId, row.email, [row.firstName, row.lastName].filter(Boolean).join(' '), row.status, row.role, row.groups.length]);
    lines.push(`first ${report.rows.length} rows as read:`, fitTable(head, rows, { width: options.width, flex: [1, 3, 2] }));
    // Attributes are as long as an export makes them: a line each, under the table, rather than a column cut short.
    const withAttributes = report.rows.filter((row) => attributesText(row) !== '');
    if (withAttributes.length > 0) lines.push('attributes as read:', ...withAttributes.map((row) => `  line ${row.line}: ${attributesText(row)}`));
  }
  lines.push('nothing was changed (feed check touches no database, queue or platform)');
  return lines.join('\n');
}
