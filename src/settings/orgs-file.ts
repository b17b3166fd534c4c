/**
 * `TRAINSYNC_ORGS_FILE`: the organisations one deployment serves (issue 20). Parsed
 * here, beside the other settings parsers, so that src/config.ts imports no wing.
 * Secrets are given by reference only (an environment variable's name or a file path),
 * never in the file itself, so the file can live in version control.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseWebhookSecrets } from './webhook-secrets.ts';
import { parseFeedMinShare } from './feed-min-share.ts';

/** The organisation of a deployment without an orgs file: today's variables describe it. */
export const DEFAULT_ORG = 'default';

/**
 * A slug names the organisation everywhere (CLI, logs, metrics labels, the warehouse's
 * `org` column, role names, URL paths): lower case, so it is the same in every one of them.
 */
export const ORG_SLUG_RE = /^[a-z][a-z0-9_-]{0,39}$/;
export const ORG_SLUG_HINT = 'lower-case letters, digits, "-" or "_", starting with a letter, at most 40 (e.g. acme-north)';

/** One organisation, with its references resolved: what the rest of trainsync uses. */
export interface OrgSettings {
  slug: string;
  name: string;
  apiUrl?: string;
  /** The organisation's API key (a secret: never logged). */
  apiKey?: string;
  requestsPerSecond: number;
  /**
   * The share (whole percent) of the active employees a full feed must list, or `provision`
   * refuses it before planning (TRAINSYNC_FEED_MIN_SHARE, overridden by the file's `feedMinShare`).
   * Optional for settings built by hand (tests); the default is DEFAULT_FEED_MIN_SHARE.
   */
  feedMinShare?: number;
  /** Cron lines by setting (`TRAINSYNC_CRON_RESULTS`…): the environment's, overridden by the file's. */
  cronLines: Readonly<Record<string, string>>;
  /** The settings of cronLines the orgs file gives this organisation itself: kept as written, never spread. */
  ownCronSettings?: readonly string[];
  webhookSecrets?: Buffer[];
  scimToken?: Buffer;
  /** A feed profile file used when `provision`/`load-feed` get no --profile. */
  feedProfile?: string;
  /** The Postgres role that sees only this organisation's rows (created by `trainsync migrate`). */
  readerRole?: string;
}

/** A secret by reference: `{"env": "ACME_API_KEY"}` or `{"file": "/run/secrets/acme"}`. */
const reference = z.union([z.object({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name, e.g. ACME_API_KEY') }).strict(), z.object({ file: z.string().min(1, 'a file path') }).strict()], {
  error: 'a reference, {"env": "VARIABLE_NAME"} or {"file": "/path/to/secret"}; the secret itself never goes in this file',
});
type Reference = z.infer<typeof reference>;

const entrySchema = z
  .object({
    slug: z.string().regex(ORG_SLUG_RE, ORG_SLUG_HINT),
    name: z.string().trim().min(1, 'a display name, e.g. "Acme North"'),
    apiUrl: z
      .url({ error: 'an http(s) URL of the platform, e.g. https://training.example.com' })
      .refine((u) => /^https?:\/\//.test(u), 'an http(s) URL, e.g. https://training.example.com'),
    apiKey: reference,
    requestsPerSecond: z.number({ error: 'a number of requests per second, e.g. 10' }).positive('a number above 0, e.g. 10').max(10_000, 'at most 10000').optional(),
    /** As TRAINSYNC_FEED_MIN_SHARE: "50%" or 50. */
    feedMinShare: z
      .union([z.string(), z.number()])
      .transform((value, ctx) => {
        const parsed = parseFeedMinShare(value);
        if (typeof parsed === 'string') {
          ctx.addIssue({ code: 'custom', message: parsed });
          return z.NEVER;
        }
        return parsed;
      })
      .optional(),
    /** Keys are a job's setting without the prefix (RESULTS, USERS…) or the whole name. */
    cron: z.record(z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'a schedule name in capitals, e.g. RESULTS'), z.string().trim().min(1)).optional(),
    webhookSecret: reference.optional(),
    scimToken: reference.optional(),
    feedProfile: z.string().min(1, 'a feed profile file path').optional(),
    /** true: a reader role named trainsync_reader_<slug>; a string: that role name. */
    reader: z.union([z.boolean(), z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'a Postgres role name in lower case, e.g. acme_reader')]).optional(),
  })
  .strict();

const fileSchema = z.object({ organisations: z.array(z.unknown()).min(1, 'at least one organisation') }).strict();

export type CronLineCheck = (value: string) => string | undefined;

export interface OrgsFileContext {
  env: Record<string, string | undefined>;
  /** Cron lines the environment sets (TRAINSYNC_CRON_*), the base each organisation overrides. */
  cronLines: Readonly<Record<string, string>>;
  defaultRequestsPerSecond: number;
  /** TRAINSYNC_FEED_MIN_SHARE: the share of an organisation that sets none. */
  defaultFeedMinShare: number;
  /** Returns a problem in words, or undefined for a valid cron line. */
  checkCron: CronLineCheck;
}

/** `trainsync_reader_<slug>` with "-" as "_": a role name that needs no quoting. */
export function defaultReaderRole(slug: string): string {
  return `trainsync_reader_${slug.replace(/-/g, '_')}`;
}

function resolveReference(ref: Reference, baseDir: string, env: Record<string, string | undefined>): string | { problem: string } {
  if ('env' in ref) {
    const value = env[ref.env];
    return value === undefined || value.trim() === '' ? { problem: `the variable ${ref.env} it names is not set` } : value.trim();
  }
  const file = path.resolve(baseDir, ref.file);
  try {
    const value = readFileSync(file, 'utf8').trim();
    return value === '' ? { problem: `the file ${file} it names is empty` } : value;
  } catch (error) {
    return { problem: `the file ${file} it names cannot be read (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})` };
  }
}

function readDocument(file: string): unknown {
  const text = readFileSync(file, 'utf8');
  return /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
}

/**
 * Reads and checks the orgs file. Returns the organisations, or every problem found,
 * each naming the file, the entry and the key (so a person fixes them all in one go).
 */
export function readOrgsFile(file: string, context: OrgsFileContext): OrgSettings[] | string[] {
  let document: unknown;
  try {
    document = readDocument(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return [`TRAINSYNC_ORGS_FILE: ${file}: ${code ? `cannot be read (${code})` : `is not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'} (${error instanceof Error ? error.message : String(error)})`}`];
  }
  const top = fileSchema.safeParse(document);
  if (!top.success) {
    const issue = top.error.issues[0];
    return [`TRAINSYNC_ORGS_FILE: ${file}: ${issue?.path.length ? `${issue.path.join('.')}: ` : ''}expected {"organisations": [ … ]} (${issue?.message ?? 'invalid'})`];
  }
  const baseDir = path.dirname(path.resolve(file));
  const problems: string[] = [];
  const orgs: OrgSettings[] = [];
  const seen = new Set<string>();
  for (const [index, raw] of top.data.organisations.entries()) {
    const rawSlug = typeof raw === 'object' && raw !== null && typeof (raw as { slug?: unknown }).slug === 'string' ? (raw as { slug: string }).slug : undefined;
    const where = `TRAINSYNC_ORGS_FILE: ${file}: organisations[${index}]${rawSlug ? ` (${rawSlug})` : ''}`;
    const parsed = entrySchema.safeParse(raw);
    if (!parsed.success) {
      const byKey = new Map<string, string>();
      for (const issue of parsed.error.issues) {
        const key = issue.path.length > 0 ? issue.path.join('.') : (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '(entry)');
        if (!byKey.has(key)) byKey.set(key, `${where}: ${key}: ${issue.code === 'unrecognized_keys' ? 'unknown key; expected slug, name, apiUrl, apiKey, requestsPerSecond, feedMinShare, cron, webhookSecret, scimToken, feedProfile, reader' : issue.message}`);
      }
      problems.push(...byKey.values());
      continue;
    }
    const entry = parsed.data;
    if (seen.has(entry.slug)) problems.push(`${where}: slug: "${entry.slug}" is used by an earlier entry; each organisation needs its own slug`);
    seen.add(entry.slug);
    const apiKey = resolveReference(entry.apiKey, baseDir, context.env);
    if (typeof apiKey !== 'string') problems.push(`${where}: apiKey: ${apiKey.problem}`);
    let webhookSecrets: Buffer[] | undefined;
    if (entry.webhookSecret) {
      const value = resolveReference(entry.webhookSecret, baseDir, context.env);
      if (typeof value !== 'string') problems.push(`${where}: webhookSecret: ${value.problem}`);
      else {
        const secrets = parseWebhookSecrets(value);
        if (typeof secrets === 'string') problems.push(`${where}: webhookSecret: expected ${secrets}`);
        else webhookSecrets = secrets;
      }
    }
    let scimToken: Buffer | undefined;
    if (entry.scimToken) {
      const value = resolveReference(entry.scimToken, baseDir, context.env);
      if (typeof value !== 'string') problems.push(`${where}: scimToken: ${value.problem}`);
      else if (value.length < 20 || !/^[\x21-\x7e]+$/.test(value)) problems.push(`${where}: scimToken: expected at least 20 printable characters without spaces, e.g. the output of \`openssl rand -hex 32\``);
      else scimToken = Buffer.from(value, 'utf8');
    }
    const cronLines: Record<string, string> = { ...context.cronLines };
    for (const [name, line] of Object.entries(entry.cron ?? {})) {
      const setting = name.startsWith('TRAINSYNC_CRON_') ? name : `TRAINSYNC_CRON_${name}`;
      const problem = context.checkCron(line);
      if (problem) problems.push(`${where}: cron.${name}: got ${JSON.stringify(line)}; expected ${problem}`);
      else cronLines[setting] = line;
    }
    orgs.push({
      slug: entry.slug,
      name: entry.name,
      apiUrl: entry.apiUrl,
      ...(typeof apiKey === 'string' ? { apiKey } : {}),
      requestsPerSecond: entry.requestsPerSecond ?? context.defaultRequestsPerSecond,
      feedMinShare: entry.feedMinShare ?? context.defaultFeedMinShare,
      cronLines: Object.freeze(cronLines),
      ownCronSettings: Object.freeze(Object.keys(entry.cron ?? {}).map((name) => (name.startsWith('TRAINSYNC_CRON_') ? name : `TRAINSYNC_CRON_${name}`))),
      ...(webhookSecrets ? { webhookSecrets } : {}),
      ...(scimToken ? { scimToken } : {}),
      ...(entry.feedProfile ? { feedProfile: path.resolve(baseDir, entry.feedProfile) } : {}),
      ...(entry.reader === true ? { readerRole: defaultReaderRole(entry.slug) } : typeof entry.reader === 'string' ? { readerRole: entry.reader } : {}),
    });
  }
  const readers = orgs.flatMap((org) => (org.readerRole ? [org.readerRole] : []));
  for (const role of new Set(readers)) {
    if (readers.filter((r) => r === role).length > 1) problems.push(`TRAINSYNC_ORGS_FILE: ${file}: reader: the role ${role} is given to several organisations; each needs its own`);
  }
  return problems.length > 0 ? problems : orgs;
}
