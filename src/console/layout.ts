import { html, type SafeHtml } from './html.ts';
import { orgSearchForm, SELECT_UP_TO } from './org-search-form.ts';
import type { Viewer } from './viewer.ts';

export type { Viewer } from './viewer.ts';


/**
 * The organisation selector: shown only when several are configured; a form (the CSP allows no
 * inline script). Above SELECT_UP_TO organisations, a search form instead (routes/orgs.ts).
 */
function orgSelector(viewer: Viewer): SafeHtml {
  const { scope } = viewer;
  if (!scope.multi) return html``;
  if (scope.orgs.length > SELECT_UP_TO) return orgSearchForm(viewer);
  return html`<form method="post" action="/org" class="org-select" id="org-form"><input type="hidden" name="_csrf" value="${viewer.csrfToken}"><input type="hidden" name="back" value="${viewer.path}">
<label>organisation <select name="org" id="org-select"><option value="" ${scope.org === undefined ? html`selected` : ''}>all organisations</option>${scope.orgs.map(
    (o) => html`<option value="${o.slug}" ${o.slug === scope.org ? html`selected` : ''}>${o.name} (${o.slug})</option>`,
  )}</select></label> <button type="submit" id="org-apply">Show</button></form>`;
}

/** The scope in words, under the title: which organisation's rows these are (also for a user of one of several). */
function scopeLine(viewer: Viewer): SafeHtml {
  const { scope } = viewer;
  if (!scope.multi && !scope.limited) return html``;
  const chosen = scope.orgs.find((o) => o.slug === scope.org);
  return html`<p class="scope" id="scope">${chosen ? html`Organisation <strong>${chosen.name}</strong> (${chosen.slug})` : html`All ${scope.orgs.length} organisations`}</p>`;
}

const NAV: readonly [string, string][] = [
  ['/', 'Overview'],
  ['/runs', 'Runs'],
  ['/provisioning', 'Provisioning'],
  ['/people', 'People'],
  ['/webhooks', 'Webhooks'],
  ['/queues', 'Queues'],
];

/** The menu: bull-board shows every organisation's queue, so a user limited to some has no Queues (its routes answer 404 too). */
function navOf(viewer: Viewer): readonly [string, string][] {
  return viewer.scope.limited ? NAV.filter(([href]) => href !== '/queues') : NAV;
}

/** A whole page: no inline script or style (the CSP forbids both); assets come from /assets. */
export function page(title: string, viewer: Viewer | undefined, body: SafeHtml, options: { chart?: boolean } = {}): SafeHtml {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} &middot; trainsync</title>
<link rel="stylesheet" href="/assets/console.css">
${options.chart ? html`<link rel="stylesheet" href="/assets/uplot.css"><script src="/assets/uplot.js" defer></script><script src="/assets/charts.js" defer></script>` : ''}
</head><body>
<header><strong>trainsync</strong>
${viewer ? html`<nav>${navOf(viewer).map(([href, label]) => html`<a href="${href}">${label}</a>`)}</nav>
${orgSelector(viewer)}
<form method="post" action="/logout" class="logout"><input type="hidden" name="_csrf" value="${viewer.csrfToken}"><span>${viewer.name} (${viewer.role})</span> <button type="submit">Log out</button></form>` : ''}
</header>
<main><h1>${title}</h1>
${viewer ? scopeLine(viewer) : ''}
${viewer?.flash ? html`<p class="ok" id="outcome" role="status">${viewer.flash}</p>` : ''}
${body}
</main></body></html>`;
}

/**
 * A POST button with the CSRF token; shown only to operators (the server checks the
 * role regardless). `org`: the organisation of the row it acts on, sent with the form.
 */
export function actionButton(viewer: Viewer, action: string, label: string, id: string, org?: string): SafeHtml {
  if (viewer.role !== 'operator') return html``;
  return html`<form method="post" action="${action}" class="inline"><input type="hidden" name="_csrf" value="${viewer.csrfToken}">${org ? html`<input type="hidden" name="org" value="${org}">` : ''}<button type="submit" id="${id}">${label}</button></form>`;
}

/** The organisation column of a list: only when several are configured. */
export function orgHeader(viewer: Viewer): SafeHtml {
  return viewer.scope.multi ? html`<th>org</th>` : html``;
}
export function orgCell(viewer: Viewer, org: string | undefined): SafeHtml {
  return viewer.scope.multi ? html`<td class="org">${org ?? ''}</td>` : html``;
}

/**
 * Newer/older links of a paged list, keeping `keep` (the filters, and the pages of a page's
 * other lists). `pageParam`: this list's page parameter, when a page has more than one list;
 * `anchor`: the list's element id, so the link lands on the list rather than the page's top.
 */
export function pager(base: string, page: number, hasMore: boolean, keep: Record<string, string | number | undefined>, pageParam = 'page', anchor?: string): SafeHtml {
  const link = (p: number): string => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(keep)) if (v !== undefined && v !== '' && k !== pageParam) params.set(k, String(v));
    if (p > 1) params.set(pageParam, String(p));
    const search = params.toString();
    return `${base}${search ? `?${search}` : ''}${anchor ? `#${anchor}` : ''}`;
  };
  // A list that fits one page needs no pager.
  if (page === 1 && !hasMore) return html``;
  return html`<p class="pager" data-list="${pageParam}">${page > 1 ? html`<a href="${link(page - 1)}" rel="prev">&larr; newer</a>` : ''} page ${page} ${hasMore ? html`<a href="${link(page + 1)}" rel="next">older &rarr;</a>` : ''}</p>`;
}
