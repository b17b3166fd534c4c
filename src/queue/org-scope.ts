import { DEFAULT_ORG } from '../settings/orgs-file.ts';

/**
 * Names that must differ per organisation (deduplication ids, scheduler ids, exclusive
 * lock keys): `<org>.<name>`. The `default` organisation keeps the bare name, so a
 * single-organisation deployment's queued jobs, schedulers and locks are unchanged.
 * (A slug has no ".", so the two parts never blur.)
 */
export function orgScoped(org: string, name: string): string {
  return org === DEFAULT_ORG ? name : `${org}.${name}`;
}

/** The organisation a queued job belongs to; `default` for jobs queued before organisations existed. */
export function jobOrg(data: unknown): string {
  if (typeof data === 'object' && data !== null) {
    const org = (data as { org?: unknown }).org;
    if (typeof org === 'string' && org !== '') return org;
  }
  return DEFAULT_ORG;
}

/** BullMQ's lowest priority (2^21); positions beyond it share it, in FIFO order. */
const PRIORITY_LIMIT = 2 ** 21;

/** A position in an organisation's batch as a BullMQ priority (1 = first). */
export function fairPriority(position: number): number {
  return Math.min(Math.max(1, Math.floor(position)), PRIORITY_LIMIT);
}
