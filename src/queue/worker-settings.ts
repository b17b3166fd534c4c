import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { OrgSettings } from '../settings/orgs-file.ts';

/**
 * The settings that decide what a job of an organisation reads and writes, as a worker
 * publishes them and a command compares them: the platform's origin, a fingerprint of the
 * API key (the first 8 hex digits of its SHA-256, never the key) and the database (host,
 * port and name, never the user or password). A command whose job another process ran
 * reports that process's result as its own only when these are the same.
 */
export const settingsFingerprintSchema = z.object({
  origin: z.string(),
  key: z.string(),
  database: z.string(),
});
export type SettingsFingerprint = z.infer<typeof settingsFingerprintSchema>;

/** How long a worker's published settings live without being refreshed (a worker refreshes them every hour). */
export const WORKER_SETTINGS_TTL_SECONDS = 24 * 3600;
export const WORKER_SETTINGS_REFRESH_MS = 3600_000;

/** The first 8 hex digits of the key's SHA-256: enough to tell two keys apart, useless to anyone who reads it. */
export function keyFingerprint(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex').slice(0, 8);
}

/** host:port/name of a Postgres URL, without credentials; a digest when it cannot be read. */
export function databaseFingerprint(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl.includes('@/') ? databaseUrl.replace('@/', '@socket/') : databaseUrl);
    const host = url.searchParams.get('host') ?? url.hostname;
    return `${host}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return `sha256:${createHash('sha256').update(databaseUrl).digest('hex').slice(0, 8)}`;
  }
}

function originOf(apiUrl: string): string {
  try {
    return new URL(apiUrl).origin;
  } catch {
    return apiUrl;
  }
}

/** One organisation's fingerprint; undefined when it has no platform configured (a worker may serve only some). */
export function fingerprintOf(config: Pick<Config, 'DATABASE_URL'>, org: Pick<OrgSettings, 'apiUrl' | 'apiKey'>): SettingsFingerprint | undefined {
  if (!org.apiUrl || !org.apiKey) return undefined;
  return { origin: originOf(org.apiUrl), key: keyFingerprint(org.apiKey), database: databaseFingerprint(config.DATABASE_URL) };
}

/** Every organisation's fingerprint, as the fields of the worker's hash (JSON values). */
export function publishedFields(config: Pick<Config, 'DATABASE_URL' | 'orgs'>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const org of config.orgs) {
    const fingerprint = fingerprintOf(config, org);
    if (fingerprint) fields[org.slug] = JSON.stringify(fingerprint);
  }
  return fields;
}

/** A published field read back; undefined when absent or unreadable. */
export function parsePublished(value: string | null | undefined): SettingsFingerprint | undefined {
  if (value === null || value === undefined) return undefined;
  try {
    const parsed = settingsFingerprintSchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** What differs between the worker's settings and the command's, in words ("API key (worker 1a2b3c4d, here 5e6f7a8b)"); empty when none. */
export function settingsDifferences(worker: SettingsFingerprint, mine: SettingsFingerprint): string[] {
  const differences: string[] = [];
  if (worker.origin !== mine.origin) differences.push(`platform origin (worker ${worker.origin}, here ${mine.origin})`);
  if (worker.key !== mine.key) differences.push(`API key (sha256 ${worker.key}… on the worker, ${mine.key}… here)`);
  if (worker.database !== mine.database) differences.push(`database (worker ${worker.database}, here ${mine.database})`);
  return differences;
}
