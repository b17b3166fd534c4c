import type { Config } from '../config.ts';
import { DEFAULT_ORG } from '../lib/orgs-file.ts';

/**
 * The organisations a console page shows. Every page is scoped: to the one organisation
 * chosen in the selector at the top (kept in the session), or to all of them. Queries
 * always name the organisations explicitly (`org = any($slugs)`), so "all" means every
 * configured organisation, never rows of one no longer configured.
 */
export interface Scope {
  /** Every configured organisation, in the file's order. */
  orgs: ReadonlyArray<{ slug: string; name: string }>;
  /** The organisation chosen; undefined: all of them. */
  org: string | undefined;
  /** What queries filter on: the chosen one, or every configured one. */
  slugs: string[];
  /** More than one organisation is configured: the selector and the org columns show. */
  multi: boolean;
}

/** The scope of a session: its chosen organisation if still configured, the only one, or all. */
export function scopeOf(config: Pick<Config, 'orgs'>, chosen: string | null | undefined): Scope {
  const orgs = config.orgs.map((o) => ({ slug: o.slug, name: o.name }));
  const multi = orgs.length > 1;
  const org = !multi ? orgs[0]?.slug : orgs.some((o) => o.slug === chosen) ? (chosen ?? undefined) : undefined;
  return { orgs, org, slugs: org === undefined ? orgs.map((o) => o.slug) : [org], multi };
}

/** Whether `slug` is a configured organisation (a form field naming one is checked with this). */
export function isConfigured(scope: Scope, slug: string | undefined): slug is string {
  return slug !== undefined && scope.orgs.some((o) => o.slug === slug);
}

/**
 * The organisation a change acts in when the row did not say (a form without `org`):
 * the chosen one, or the only one; undefined when several are configured and none is chosen.
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
