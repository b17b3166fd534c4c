import { stderrLine } from '../render/terminal.ts';
import { InvalidArgumentError, type Command } from 'commander';
import { errorMessage } from '../../lib/errors.ts';
import { parseColumnMap } from '../../provisioning/feed/columns.ts';
import { feedReadOptions, FeedProfileError, loadFeedProfile, type FeedProfile } from '../../provisioning/feed/profile.ts';
import { feedFormatFor } from '../../provisioning/feed/read.ts';
import type { ColumnMap, FeedFormat, ReadFeedOptions } from '../../provisioning/feed/types.ts';

/** The options of every command that reads an HR feed (`provision`, `load-feed`, `feed check`). */
export interface FeedCliOptions {
  profile?: string;
  format?: FeedFormat;
  map?: ColumnMap;
}

/** A commander parser accepting one of `values`. */
export function oneOf<T extends string>(values: readonly T[]) {
  return (value: string): T => {
    if (!(values as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected ${values.join(' or ')}`);
    return value as T;
  };
}

function columnMap(value: string): ColumnMap {
  try {
    return parseColumnMap(value);
  } catch (error) {
    throw new InvalidArgumentError(errorMessage(error));
  }
}

/** Adds `--profile`, `--format` and `--map` to a command. */
/** The feed file argument and the options every feed-reading command shares. */
export function addFeedOptions(command: Command): Command {
  return command
    .argument('<file>', 'the HR feed: CSV with a header row, or JSON Lines (.jsonl/.ndjson)')
    .option('--profile <file>', 'a JSON feed profile: delimiter, encoding, columns, status words, end-date leaver rule, attributes (see docs/it-admin.md, "Feed profiles")')
    .option('--format <format>', 'csv or jsonl (default: the profile\'s, else by the file extension)', oneOf(['csv', 'jsonl'] as const))
    .option('--map <field=Header,...>', 'read fields from differently named columns, e.g. "email=Work Email,employee_id=Person Number"; each pair overrides the profile\'s', columnMap);
}

/** How to read the feed: the profile (if any) under the command line's options. */
export interface ResolvedFeedReading {
  profile?: FeedProfile;
  format: FeedFormat;
  /** Every reader option, format and map included. */
  options: ReadFeedOptions & { format: FeedFormat };
}

/**
 * The organisation's default feed profile (OrgSettings.feedProfile, from TRAINSYNC_ORGS_FILE)
 * when the command line names none: each organisation's HR export has its own columns.
 */
export function withOrgProfile<T extends FeedCliOptions>(cli: T, org: { feedProfile?: string | undefined }): T {
  return cli.profile === undefined && org.feedProfile !== undefined ? { ...cli, profile: org.feedProfile } : cli;
}

/** Loads the profile (FeedProfileError names the file, key and fix) and merges the command line over it. */
export async function resolveFeedReading(file: string, cli: FeedCliOptions): Promise<ResolvedFeedReading> {
  const profile = cli.profile === undefined ? undefined : await loadFeedProfile(cli.profile);
  const options = feedReadOptions(profile, { format: cli.format, map: cli.map });
  const format = options.format ?? feedFormatFor(file);
  return { ...(profile ? { profile } : {}), format, options: { ...options, format } };
}

/**
 * resolveFeedReading for a command's action: a bad profile is printed (file, key, fix)
 * and gives exit status 2, like a feed that cannot be read; undefined then.
 */
export async function feedReadingOrExit(file: string, cli: FeedCliOptions): Promise<ResolvedFeedReading | undefined> {
  try {
    return await resolveFeedReading(file, cli);
  } catch (error) {
    if (!(error instanceof FeedProfileError)) throw error;
    process.exitCode = 2;
    stderrLine(error.message);
    return undefined;
  }
}

export const FEED_PROFILE_HELP = `
Feed profile (--profile FILE, JSON; every key optional; options on the command line win):
  {"format": "csv", "delimiter": ";", "encoding": "utf-8",
   "columns": {"employee_id": "WorkerID", "email": "Work Email", "status": "WorkerStatus"},
   "statusMap": {"Long-term leave": "inactive", "On Leave": "active"},
   "leaverRule": {"column": "Contract End", "dateFormat": "d-M-yyyy"},
   "attributes": {"department": "Department", "manager": "ManagerID"}}
Without a profile the delimiter is detected from the header line (, ; tab |).
"encoding": utf-8 (default), utf-16le, utf-16be, windows-1252 (cp1252) or iso-8859-1
(latin1); many HR systems on Windows export windows-1252. A byte-order mark always wins.`;

/** `--mode full|delta`, worded for what the command does with an employee the feed leaves out. */
export function addModeOption(command: Command, fullMeans: string): Command {
  return command.option('--mode <mode>', `full: ${fullMeans}; delta: touch only listed employees`, oneOf(['full', 'delta'] as const), 'full');
}
