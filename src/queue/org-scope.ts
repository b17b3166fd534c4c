import { DEFAULT_ORG } from '../lib/orgs-file.ts';

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
