import { DEFAULT_ORG } from '../settings/orgs-file.ts';

/**
 * The organisations a console page shows. Every page is scoped: to the one organisation
 * chosen in the selector at the top (kept in the session), or to all of them. Queries
 * always name the organisations explicitly (`org = any($slugs)`), so "all" means every
 * configured organisation, never rows of one no longer configured.
 */
export interface Scope {
  /** The organisations this console user may see (every configured one, or those the user's entry names), in the file's order. */
  orgs: ReadonlyArray<{ slug: string; name: string }>;
  /** The organisation chosen; undefined: all of them. */
  org: string | undefined;
  /** What queries filter on: the chosen one, or every one the user may see. */
  slugs: string[];
  /** The user may see more than one organisation: the selector and the org columns show. */
  multi: boolean;
  /**
   * The user sees only some of the configured organisations: anything of another answers
   * 404, as if it did not exist, and bull-board (every organisation's queue) is not theirs.
   */
  limited: boolean;
}

/**
 * The scope of a session: its chosen organisation if the user may see it, the only one, or all
 * of the user's. `allowed`: the organisations of the user's entry (undefined: every one).
 */
export function scopeOf(config: { orgs: ReadonlyArray<{ slug: string; name: string }> }, chosen: string | null | undefined, allowed?: readonly string[]): Scope {
  const orgs = config.orgs.filter((o) => allowed === undefined || allowed.includes(o.slug)).map((o) => ({ slug: o.slug, name: o.name }));
  const multi = orgs.length > 1;
  const org = !multi ? orgs[0]?.slug : orgs.some((o) => o.slug === chosen) ? (chosen ?? undefined) : undefined;
  const limited = orgs.length < config.orgs.length;
  return { orgs, org, slugs: org === undefined ? orgs.map((o) => o.slug) : [org], multi, limited };
}

/** Whether `slug` is an organisation of the scope, configured and the user's (a form field naming one is checked with this). */
export function isConfigured(scope: Scope, slug: string | undefined): slug is string {
  return slug !== undefined && scope.orgs.some((o) => o.slug === slug);
}

/**
 * The organisation a change acts in when the row did not say (a form without `org`):
 * the chosen one, or the only one; undefined when several are configured and none is chosen.
 * A limited user's form naming another organisation is answered 404 before this (outsideOrg).
 */
export function actingOrg(scope: Scope, given: string | undefined): string | undefined {
  if (isConfigured(scope, given)) return given;
  return scope.org;
}

/** The organisation a scheduler id belongs to (`<org>.<name>`, or a bare name for `default`; see queue/org-scope.ts). */
export function scheduleOrg(id: string): string {
  const dot = id.indexOf('.');
  return dot > 0 ? id.slice(0, dot) : DEFAULT_ORG;
}

/** The organisation of a row from another wing's module, when its type already carries it. */
export function orgOfRow(row: object): string | undefined {
  return 'org' in row && typeof row.org === 'string' ? row.org : undefined;
}

/**
 * A form or choice naming an organisation a limited user may not see (configured or not: a
 * user of one client learns nothing of the others' slugs). The caller answers 404 and
 * changes nothing. A user of every organisation naming an unknown slug keeps the fallback
 * of actingOrg (the chosen one).
 */
export function outsideOrg(scope: Scope, given: string | undefined): boolean {
  return scope.limited && given !== undefined && given !== '' && !isConfigured(scope, given);
}
