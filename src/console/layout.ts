import { html, type SafeHtml } from './html.ts';
import type { ConsoleRole } from '../lib/console-users.ts';

export interface Viewer {
  name: string;
  role: ConsoleRole;
  csrfToken: string;
}

const NAV: readonly [string, string][] = [
  ['/', 'Overview'],
  ['/runs', 'Runs'],
  ['/provisioning', 'Provisioning'],
  ['/people', 'People'],
  ['/webhooks', 'Webhooks'],
  ['/queues', 'Queues'],
];

/** A whole page: no inline script or style (the CSP forbids both); assets come from /assets. */
export function page(title: string, viewer: Viewer | undefined, body: SafeHtml, options: { chart?: boolean } = {}): SafeHtml {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · trainsync</title>
<link rel="stylesheet" href="/assets/console.css">
${options.chart ? html`<link rel="stylesheet" href="/assets/uplot.css"><script src="/assets/uplot.js" defer></script><script src="/assets/charts.js" defer></script>` : ''}
</head><body>
<header><strong>trainsync</strong>
${viewer ? html`<nav>${NAV.map(([href, label]) => html`<a href="${href}">${label}</a>`)}</nav>
<form method="post" action="/logout" class="logout"><input type="hidden" name="_csrf" value="${viewer.csrfToken}"><span>${viewer.name} (${viewer.role})</span> <button type="submit">Log out</button></form>` : ''}
</header>
<main><h1>${title}</h1>
${body}
</main></body></html>`;
}

/** A POST button with the CSRF token; shown only to operators (the server checks the role regardless). */
export function actionButton(viewer: Viewer, action: string, label: string, id: string): SafeHtml {
  if (viewer.role !== 'operator') return html``;
  return html`<form method="post" action="${action}" class="inline"><input type="hidden" name="_csrf" value="${viewer.csrfToken}"><button type="submit" id="${id}">${label}</button></form>`;
}

export function pager(base: string, page: number, hasMore: boolean, keep: Record<string, string | undefined>): SafeHtml {
  const link = (p: number): string => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(keep)) if (v) params.set(k, v);
    params.set('page', String(p));
    return `${base}?${params.toString()}`;
  };
  return html`<p class="pager">${page > 1 ? html`<a href="${link(page - 1)}">← newer</a>` : ''} page ${page} ${hasMore ? html`<a href="${link(page + 1)}">older →</a>` : ''}</p>`;
}
