import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { html, type SafeHtml } from '../html.ts';
import { page } from '../layout.ts';
import { backOf, orgSearchForm, searchOrgs } from '../org-search-form.ts';
import { isConfigured, outsideOrg, scopeOf } from '../scope.ts';
import { SESSION_COOKIE, setSessionOrg } from '../sessions.ts';
import type { PageRoutesOptions } from './kit.ts';

/**
 * The organisation selector's routes: `POST /org` (the choice, kept in the session) and
 * `GET /orgs?q=` (its search when there are many, org-search-form.ts). Plain forms, no script:
 * choosing one in the search posts to `/org` as the select does.
 */

const searchQuery = z.object({ q: z.string().max(80).optional(), back: z.string().max(500).optional() }).catch({});
const choiceForm = z.object({ org: z.string().max(40).optional(), back: z.string().max(500).optional() }).catch({});

export const orgsRoutes: FastifyPluginAsync<PageRoutesOptions> = async (server, { deps, viewerOf }) => {
  /** `GET /orgs?q=TEXT&back=PATH`: the matches, each a button that chooses it (POST /org), and "all organisations". */
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

  /** The selector: keeps the choice in the session, then back to the page it was made on. */
  server.post('/org', { preHandler: server.csrfProtection }, async (request, reply) => {
    const form = choiceForm.parse(request.body);
    const scope = scopeOf(deps.config, request.session!.org, request.consoleUser!.orgs);
    // A limited user choosing another organisation: 404, the choice unchanged (never "all" of theirs in its place).
    if (outsideOrg(scope, form.org)) return reply.code(404).type('text/plain').send('no such organisation');
    const chosen = form.org && isConfigured(scope, form.org) ? form.org : null;
    await setSessionOrg(deps.scopes.unscoped, request.cookies[SESSION_COOKIE], chosen);
    // Only a path of this console: never an absolute or protocol-relative URL.
    const back = form.back && /^\/(?![/\\])/.test(form.back) ? form.back : '/';
    return reply.redirect(back);
  });
};
