import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { html, type SafeHtml } from './html.ts';
import { page, type Viewer } from './layout.ts';
import { backOf, orgSearchForm, searchOrgs } from './org-search-form.ts';

/**
 * `GET /orgs?q=`: the organisation search of the selector when there are many (see
 * org-search-form.ts). Plain forms, no script: choosing one posts to `/org` as the select does.
 */

const searchQuery = z.object({ q: z.string().max(80).optional(), back: z.string().max(500).optional() }).catch({});

/** `GET /orgs?q=TEXT&back=PATH`: the matches, each a button that chooses it (POST /org), and "all organisations". */
export function registerOrgSearch(server: FastifyInstance, viewerOf: (request: FastifyRequest, reply: FastifyReply) => Viewer): void {
  server.get('/orgs', async (request, reply) => {
    const query = searchQuery.parse(request.query);
    const q = query.q ?? '';
    const back = backOf(query.back);
    const viewer = { ...viewerOf(request, reply), path: back };
    const { matches, total } = searchOrgs(viewer.scope, q);
    const choose = (org: string, label: SafeHtml | string, id: string): SafeHtml =>
      html`<form method="post" action="/org" class="inline"><input type="hidden" name="_csrf" value="${viewer.csrfToken}"><input type="hidden" name="back" value="${back}"><input type="hidden" name="org" value="${org}"><button type="submit" id="${id}">${label}</button></form>`;
    const more = total - matches.length;
    const body = html`${orgSearchForm(viewer, q, 'orgs-page')}
<p id="org-matches-count">${q.trim() === '' ? `${total} organisations; the first ${matches.length} below: search by slug or name.` : `${total} match${total === 1 ? '' : 'es'} for “${q.trim()}”${more > 0 ? `; the first ${matches.length} below: refine the search for the others` : ''}.`}</p>
<ul id="org-matches">${matches.map((o) => html`<li>${choose(o.slug, html`${o.name} (${o.slug})`, `org-${o.slug}`)}</li>`)}</ul>
${viewer.scope.multi ? html`<p>${choose('', `All ${viewer.scope.orgs.length} organisations`, 'org-all')}</p>` : ''}`;
    return reply.type('text/html; charset=utf-8').send(page('Organisations', viewer, body).text);
  });
}
