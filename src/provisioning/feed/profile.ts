/**
 * Feed profiles: how one HR system's export is read, kept in a JSON file instead of a
 * dozen options retyped in every cron line (`--profile workday.json`).
 *
 * ```json
 * {
 *   "description": "Workday worker export",
 *   "format": "csv",
 *   "delimiter": ";",
 *   "encoding": "utf-8",
 *   "columns": { "employee_id": "WorkerID", "email": "WorkEmail", "status": "WorkerStatus" },
 *   "statusMap": { "Long-term leave": "inactive", "On Leave": "active" },
 *   "leaverRule": { "column": "ContractEnd", "dateFormat": "d-M-yyyy" },
 *   "attributes": { "department": "Department", "manager": "ManagerID", "location": "Location" }
 * }
 * ```
 *
 * Every key is optional. Options on the command line win: `--format` replaces the
 * profile's format, and each `--map` pair replaces that field's column. A profile with
 * an unknown key or a wrong value is refused with the file, the key and the fix.
 */
import { TrainsyncError } from '../../lib/errors.ts';
import { readFile } from 'node:fs/promises';
import { closest, distance } from 'fastest-levenshtein';
import { z } from 'zod';
import { errorMessage } from '../../lib/errors.ts';
import { compileDateFormat } from './date-format.ts';
import { parseFeedEncoding, type FeedEncoding } from './lines.ts';
import { buildStatusMap, normaliseStatusWord } from './status-words.ts';
import {
  FEED_FIELDS,
  type AttributeSelection,
  type ColumnMap,
  type FeedDelimiter,
  type FeedField,
  type FeedFormat,
  type FeedStatus,
  type LeaverRule,
  type ReadFeedOptions,
  type StatusMap,
} from './types.ts';

/** A profile that cannot be used; the message names the file, each bad key and its fix. */
export class FeedProfileError extends TrainsyncError {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(problems.length === 1 ? problems[0]! : `profile ${file} cannot be used:\n  ${problems.join('\n  ')}`, { code: 'INVALID_FEED_PROFILE', retryable: false });
    this.name = 'FeedProfileError';
  }
}

/** A profile, validated and resolved. */
export interface FeedProfile {
  /** The path as given, for messages. */
  file: string;
  description?: string;
  format?: FeedFormat;
  /** undefined: detected from the header line. */
  delimiter?: FeedDelimiter;
  encoding?: FeedEncoding;
  map: ColumnMap;
  statusMap: StatusMap;
  leaverRule?: LeaverRule;
  attributes?: AttributeSelection;
}

/** The fix shown for a bad value of each top-level key. */
const FIXES = {
  description: 'write any text, e.g. "description": "Workday worker export"',
  format: 'write "format": "csv" or "jsonl" (or leave it out: the file extension decides)',
  delimiter: 'write "delimiter": one of ",", ";", "\\t" (or "tab"), "|", or "auto" (or leave it out: it is detected from the header line)',
  encoding:
    'write "encoding": "utf-8" (default), "utf-16le", "utf-16be", "windows-1252" (or "cp1252") or "iso-8859-1" (or "latin1"), as the HR system exports it ' +
    '(a file with a byte-order mark is read by its mark whatever this says)',
  columns: `write "columns": {"<feed field>": "<header in the export>"}, e.g. {"employee_id": "WorkerID", "email": "Work Email"}; feed fields: ${FEED_FIELDS.join(', ')}`,
  statusMap: 'write "statusMap": {"<status word in the export>": "active" or "inactive"}, e.g. {"Long-term leave": "inactive"}',
  leaverRule: 'write "leaverRule": {"column": "<end-date header>", "dateFormat": "d-M-yyyy"} (tokens: d, dd, M, MM, yyyy)',
  attributes:
    'write "attributes": "all" (default: every column that is not a field, named as its header), "none", a list of headers to keep, e.g. ["Department", "Manager"], ' +
    'or {"<attribute name>": "<header>"}, e.g. {"department": "Afdeling"}',
} as const;
type ProfileKey = keyof typeof FIXES;
const PROFILE_KEYS = Object.keys(FIXES) as ProfileKey[];

const DELIMITERS: Record<string, FeedDelimiter | 'auto'> = { ',': ',', ';': ';', '\t': '\t', tab: '\t', '|': '|', auto: 'auto' };

const nonEmpty = z.string({ error: 'must be text' }).trim().min(1, { error: 'is empty' });

const columnsSchema = z.strictObject(
  Object.fromEntries(FEED_FIELDS.map((field) => [field, nonEmpty.optional()])) as Record<FeedField, z.ZodOptional<typeof nonEmpty>>,
  { error: 'must be an object of feed field → header' },
);

const leaverRuleSchema = z.strictObject(
  {
    column: nonEmpty,
    dateFormat: nonEmpty.superRefine((pattern, ctx) => {
      try {
        compileDateFormat(pattern);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: errorMessage(error) });
      }
    }),
  },
  { error: 'must be an object {"column": …, "dateFormat": …}' },
);

const profileSchema = z.strictObject(
  {
    description: z.string({ error: 'must be text' }).optional(),
    format: z.enum(['csv', 'jsonl'], { error: 'must be "csv" or "jsonl"' }).optional(),
    delimiter: z
      .string({ error: 'must be text' })
      .refine((d) => Object.hasOwn(DELIMITERS, d.toLowerCase()), { error: (issue) => `${JSON.stringify(issue.input)} is not a delimiter trainsync reads` })
      .transform((d) => DELIMITERS[d.toLowerCase()]!)
      .optional(),
    encoding: z
      .string({ error: 'must be text' })
      .refine((e) => parseFeedEncoding(e) !== undefined, { error: (issue) => `${JSON.stringify(issue.input)} is not an encoding trainsync reads` })
      .transform((e) => parseFeedEncoding(e)!)
      .optional(),
    columns: columnsSchema.optional(),
    statusMap: z
      .record(z.string().min(1, { error: 'has an empty status word' }), z.enum(['active', 'inactive'], { error: 'must be "active" or "inactive"' }), { error: 'must be an object of status word → "active" or "inactive"' })
      .optional(),
    leaverRule: leaverRuleSchema.optional(),
    attributes: z
      .union(
        [
          z.enum(['all', 'none']),
          z.array(nonEmpty).min(1, { error: 'is an empty list; write "none" to keep no column' }),
          z.record(z.string().trim().min(1, { error: 'has an empty attribute name' }), nonEmpty),
        ],
        { error: 'must be "all", "none", a list of headers or an object of attribute name → header' },
      )
      .optional(),
  },
  { error: 'must be a JSON object' },
);

/** Lower case without `_`, `-` or spaces: `status_map` and `StatusMap` both find `statusMap`. */
const squash = (key: string): string => key.toLowerCase().replace(/[_\-\s]/g, '');

function unknownKeyProblem(file: string, parent: string, key: string): string {
  const where = parent === '' ? key : `${parent}.${key}`;
  if (parent === 'columns') {
    return `profile ${file}, key "${where}": ${JSON.stringify(key)} is not a feed field; fix: ${FIXES.columns}`;
  }
  if (parent === 'leaverRule') {
    return `profile ${file}, key "${where}": not a key of leaverRule; fix: ${FIXES.leaverRule}`;
  }
  const near = PROFILE_KEYS.find((k) => squash(k) === squash(key));
  if (near) return `profile ${file}, key "${where}": not a profile key; fix: rename it to "${near}"`;
  // A typo (delimeter, encodnig): one or two letters off a key says which was meant.
  const guess = closest(squash(key), PROFILE_KEYS.map(squash));
  const typo = guess === undefined ? undefined : PROFILE_KEYS.find((k) => squash(k) === guess);
  if (typo && distance(squash(key), guess!) <= Math.max(1, Math.floor(typo.length / 4))) {
    return `profile ${file}, key "${where}": not a profile key; did you mean "${typo}"? fix: rename it to "${typo}"`;
  }
  return `profile ${file}, key "${where}": not a profile key; fix: remove it; profile keys: ${PROFILE_KEYS.join(', ')}`;
}

function describeIssues(file: string, issues: readonly z.core.$ZodIssue[]): string[] {
  const problems: string[] = [];
  for (const issue of issues) {
    const path = issue.path.map(String);
    const parent = path.join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push(unknownKeyProblem(file, parent, key));
      continue;
    }
    const top = path[0] as ProfileKey | undefined;
    const fix = top !== undefined && top in FIXES ? FIXES[top] : `write a JSON object with the keys ${PROFILE_KEYS.join(', ')}`;
    problems.push(`profile ${file}${parent === '' ? '' : `, key "${parent}"`}: ${issue.message}; fix: ${fix}`);
  }
  return problems;
}

/** Validates a profile's text; throws FeedProfileError listing every problem. */
export function parseFeedProfile(text: string, file: string): FeedProfile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new FeedProfileError(file, [`profile ${file}: not valid JSON (${errorMessage(error)}); fix: write one JSON object, e.g. {"columns": {"email": "Work Email"}}`]);
  }
  const parsed = profileSchema.safeParse(json);
  if (!parsed.success) throw new FeedProfileError(file, describeIssues(file, parsed.error.issues));
  const p = parsed.data;

  // Two spellings of one word meaning different things would make the result depend on key order.
  const seen = new Map<string, [string, FeedStatus]>();
  const problems: string[] = [];
  for (const [word, status] of Object.entries(p.statusMap ?? {})) {
    const key = normaliseStatusWord(word);
    const before = seen.get(key);
    if (before !== undefined && before[1] !== status) {
      problems.push(
        `profile ${file}, key "statusMap.${word}": the same word as "${before[0]}" (case and spacing are ignored) but says ${status}, not ${before[1]}; fix: keep one of them`,
      );
    }
    seen.set(key, [word, status]);
  }
  if (problems.length > 0) throw new FeedProfileError(file, problems);

  const map = new Map<FeedField, string>();
  for (const field of FEED_FIELDS) {
    const column = p.columns?.[field];
    if (column !== undefined) map.set(field, column);
  }
  return {
    file,
    ...(p.description !== undefined ? { description: p.description } : {}),
    ...(p.format !== undefined ? { format: p.format } : {}),
    ...(p.delimiter !== undefined && p.delimiter !== 'auto' ? { delimiter: p.delimiter } : {}),
    ...(p.encoding !== undefined ? { encoding: p.encoding } : {}),
    map,
    statusMap: buildStatusMap(Object.entries(p.statusMap ?? {})),
    ...(p.leaverRule !== undefined ? { leaverRule: { column: p.leaverRule.column, dateFormat: p.leaverRule.dateFormat } } : {}),
    ...(p.attributes !== undefined ? { attributes: p.attributes } : {}),
  };
}

/** Reads and validates a profile file; throws FeedProfileError (also for a file that cannot be read). */
export async function loadFeedProfile(file: string): Promise<FeedProfile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new FeedProfileError(file, [`cannot read profile ${file}: ${errorMessage(error)}; fix: give the path of a JSON profile, e.g. --profile examples/workday-profile.json`]);
  }
  return parseFeedProfile(text, file);
}

/** What the command line gives besides a profile. */
export interface FeedCliOptions {
  format?: FeedFormat | undefined;
  map?: ColumnMap | undefined;
}

/**
 * The reader's options: the profile's, overridden by the command line (`--format`
 * replaces the format; each `--map` pair replaces that one field's column).
 */
export function feedReadOptions(profile: FeedProfile | undefined, cli: FeedCliOptions = {}): ReadFeedOptions {
  const map = new Map<FeedField, string>(profile?.map ?? []);
  for (const [field, column] of cli.map ?? []) map.set(field, column);
  const format = cli.format ?? profile?.format;
  const options: ReadFeedOptions = {};
  if (format !== undefined) options.format = format;
  if (map.size > 0) options.map = map;
  if (profile === undefined) return options;
  if (profile.delimiter !== undefined) options.delimiter = profile.delimiter;
  if (profile.encoding !== undefined) options.encoding = profile.encoding;
  if (profile.statusMap.size > 0) options.statusMap = profile.statusMap;
  if (profile.leaverRule !== undefined) options.leaverRule = profile.leaverRule;
  if (profile.attributes !== undefined) options.attributes = profile.attributes;
  return options;
}
