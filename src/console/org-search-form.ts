import { html, type SafeHtml } from './html.ts';
import type { Viewer } from './viewer.ts';
import type { Scope } from './scope.ts';

/**
 * The organisation selector with many organisations: a `<select>` of 1,000 options would make
 * every page of the console 100 KB heavier, so above SELECT_UP_TO the header holds a search
 * form instead, and `GET /orgs?q=` (routes/orgs.ts) answers with at most MATCHES_SHOWN of the
 * user's organisations whose slug or name contains the text. Only the organisations the user
 * may see are searched (`scope.orgs`), so a search never names another's.
 */

/** Up to this many organisations the selector is a `<select>` listing them all. */
export const SELECT_UP_TO = 20;
/** Matches a search lists; it says how many more match. */
export const MATCHES_SHOWN = 20;

/** The user's organisations whose slug or name contains `q` (any case), in the orgs file's order: the first `limit`, and how many match. */
export function searchOrgs(scope: Pick<Scope, 'orgs'>, q: string, limit = MATCHES_SHOWN): { matches: Array<{ slug: string; name: string }>; total: number } {
  const needle = q.trim().toLowerCase();
  const matches: Array<{ slug: string; name: string }> = [];
  let total = 0;
  for (const org of scope.orgs) {
    if (needle !== '' && !org.slug.toLowerCase().includes(needle) && !org.name.toLowerCase().includes(needle)) continue;
    total += 1;
    if (matches.length < limit) matches.push(org);
  }
  return { matches, total };
}

/** The header's search form (GET, so it needs no token), with the current choice beside it. */
export function orgSearchForm(viewer: Viewer, q = '', id = 'org'): SafeHtml {
  const chosen = viewer.scope.orgs.find((o) => o.slug === viewer.scope.org);
  return html`<form method="get" action="/orgs" class="org-select" id="${id}-search" role="search"><input type="hidden" name="back" value="${backOf(viewer.path)}">
<label>organisation <input type="search" name="q" id="${id}-q" value="${q}" maxlength="80" placeholder="${chosen ? `${chosen.name} (${chosen.slug})` : `all ${viewer.scope.orgs.length}: search slug or name`}"></label> <button type="submit" id="${id}-find">Find</button></form>`;
}

/** Only a path of this console: never an absolute or protocol-relative URL (as POST /org checks it). */
export function backOf(path: string | undefined): string {
  return path && /^\/(?![/\\])/.test(path) && !path.startsWith('/orgs') ? path : '/';
}

