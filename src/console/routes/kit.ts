import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { z } from 'zod';
import type { OrgDb, OrgScope } from '../../warehouse/scope.ts';
import { recordConsoleChange } from '../data/provisioning.ts';
import type { ConsoleDeps } from '../deps.ts';
import { html, type SafeHtml } from '../html.ts';
import { page, type Viewer } from '../layout.ts';
import { outsideOrg } from '../scope.ts';

/**
 * What every page's routes share (each page's file in this folder is a Fastify plugin given
 * `PageRoutesOptions`): the scoped handles, the guard and audit of a change, and the answers a
 * page gives besides itself (404 for what the user may not see, 400 for a filter it cannot use,
 * the outcome of a change). The login hook in server.ts has run before any route.
 */

export type ViewerOf = (request: FastifyRequest, reply: FastifyReply) => Viewer;

/** What server.ts registers each page's routes with. */
export interface PageRoutesOptions {
  deps: ConsoleDeps;
  viewerOf: ViewerOf;
}

/** A page's deps in one organisation: its scoped handle in place of any other. */
export type InOrg = ConsoleDeps & { scope: OrgScope };

export function send(reply: FastifyReply, body: SafeHtml): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body.text);
}

/** The shared parts, for the routes registered on `server` (a page's plugin instance). */
export function pageKit(server: FastifyInstance, { deps, viewerOf }: PageRoutesOptions) {
  // Every query reaches its rows through the scoped handle of the organisations it names:
  // Postgres shows it those organisations' rows and no other (src/warehouse/scope.ts).
  const dbOf = (orgs: string | readonly string[]): OrgScope['db'] => deps.scopes.scope(orgs).db;
  /** The handle of one organisation: the stores read the organisation from it. */
  const handleOf = (org: string): OrgScope => deps.scopes.scope(org);
  const inOrg = (org: string): InOrg => ({ ...deps, scope: handleOf(org) });
  /** Changes: operators only (the server decides, whatever the page showed), and every one is audited. */
  const operator: preHandlerAsyncHookHandler = async (request, reply) => {
    if (request.session?.role === 'operator') return undefined;
    deps.log.warn({ user: request.session?.username, url: request.url }, 'console change refused: not an operator');
    return reply.code(403).type('text/plain').send('operators only: your role is viewer');
  };
  /**
   * What is not in the organisations the user may see answers 404 as what does not exist:
   * a user limited to some learns nothing of the others (not even that an id is taken).
   */
  const notFound = (reply: FastifyReply, what: string): FastifyReply => reply.code(404).type('text/plain').send(`no ${what} in the organisations shown`);
  /** A filter the page cannot use: 400, the reason, and the page without its filters. */
  const badFilter = (request: FastifyRequest, reply: FastifyReply, title: string, message: string, back: string): FastifyReply =>
    send(reply.code(400), page(title, viewerOf(request, reply), html`<p class="error" id="bad-filter">${message}</p><p><a href="${back}">Show ${title} without filters</a></p>`));

  return {
    dbOf,
    handleOf,
    inOrg,
    viewerOf,
    notFound,
    badFilter,
    // The token is in the form body, so it is checked once the body is parsed; then the role.
    changeHooks: { preHandler: [server.csrfProtection, operator] },
    /** Audits a change made in the organisation of `scope`. */
    audit: (request: FastifyRequest, scope: OrgDb, action: string, target: string, detail: Record<string, unknown> = {}): Promise<void> =>
      recordConsoleChange(scope, { username: request.session!.username, role: request.session!.role, action, target, detail }),
    /** The page's scope, and the one organisation it must show for a per-organisation page (undefined when "all" of several is chosen). */
    scopeOf: (request: FastifyRequest, reply: FastifyReply): { viewer: Viewer; slugs: string[]; one: string | undefined } => {
      const viewer = viewerOf(request, reply);
      return { viewer, slugs: viewer.scope.slugs, one: viewer.scope.org };
    },
    /** A change's form naming an organisation the (limited) user may not see: logged, answered 404, nothing done. */
    refuseOutside: (request: FastifyRequest, reply: FastifyReply, org: string | undefined): FastifyReply | undefined => {
      if (!outsideOrg(viewerOf(request, reply).scope, org)) return undefined;
      deps.log.warn({ user: request.session?.username, url: request.url, org }, 'console change refused: another organisation');
      return notFound(reply, 'such organisation');
    },
    /** A page that works on one organisation at a time (reconciliation, drift repair): asks for one when "all" of several is chosen. */
    chooseOne: (reply: FastifyReply, viewer: Viewer, title: string): FastifyReply =>
      send(reply, page(title, viewer, html`<p id="choose-org">This page works on one organisation at a time: choose one with the selector above.</p>`)),
    /**
     * The page's query, or (answered 400 with the fields and why) undefined: a filter given twice,
     * or too long, is the request's mistake, never a fault and never silently dropped.
     */
    queryOf: <T extends z.ZodType>(schema: T, request: FastifyRequest, reply: FastifyReply, title: string, back: string): z.infer<T> | undefined => {
      const parsed = schema.safeParse(request.query);
      if (parsed.success) return parsed.data;
      const fields = [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? 'query')))].map((f) => `"${f.slice(0, 40)}"`).join(', ');
      badFilter(request, reply, title, `The filter ${fields} cannot be used: give each filter once, as the page's form does (text of at most 200 characters, with no NUL character).`, back);
      return undefined;
    },
    /** What a change did (200) or why it did nothing (409), with the way back. */
    outcomePage: (request: FastifyRequest, reply: FastifyReply, title: string, message: string, back: string, ok: boolean): FastifyReply =>
      send(reply.code(ok ? 200 : 409), page(title, viewerOf(request, reply), html`<p class="${ok ? 'ok' : 'error'}" id="outcome">${message}</p><p><a href="${back}">Back</a></p>`)),
    /** A change with no organisation to act in (several shown, none chosen, the form names none): 400. */
    refuseNoOrg: (request: FastifyRequest, reply: FastifyReply, title: string, back: string): FastifyReply =>
      send(reply.code(400), page(title, viewerOf(request, reply), html`<p class="error" id="outcome">Which organisation? Choose one with the selector above, or use the button on the row.</p><p><a href="${back}">Back</a></p>`)),
  };
}
