import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleUser } from '../settings/console-users.ts';
import { mountQueueBoard } from '../queue/board.ts';
import { startHttpServer, type ErrorAnswer, type HttpServer, type HttpServerOptions, type ServerDefinition, type ServerPlugin } from '../http/server-factory.ts';
import type { ConsoleDeps } from './deps.ts';
import { recordConsoleChange } from './data/provisioning.ts';
import { html } from './html.ts';
import { page, type Viewer } from './layout.ts';
import { scopeOf } from './scope.ts';
import { takeFlash } from './flash.ts';
import { findSession, SESSION_COOKIE, type Session } from './sessions.ts';
import { assetRoutes } from './routes/assets.ts';
import type { PageRoutesOptions } from './routes/kit.ts';
import { loginRoutes } from './routes/login.ts';
import { orgsRoutes } from './routes/orgs.ts';
import { overviewRoutes } from './routes/overview.ts';
import { peopleRoutes } from './routes/people.ts';
import { provisioningRoutes } from './routes/provisioning.ts';
import { runsRoutes } from './routes/runs.ts';
import { webhooksRoutes } from './routes/webhooks.ts';

export type ConsoleServer = HttpServer;

export { SESSION_COOKIE } from './sessions.ts';

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');
/**
 * bull-board's page sets `<base href="/queues/">` and loads its script and style relative to
 * it: with `base-uri 'none'` the browser fetches them from /static/ (404) and the page stays
 * on "Loading". Its pages alone may set a base, and only to this origin.
 */
const QUEUES_CSP = CSP.replace("base-uri 'none'", "base-uri 'self'");

declare module 'fastify' {
  interface FastifyRequest {
    session?: Session;
    /** The configured user of the session (their organisations with it). */
    consoleUser?: ConsoleUser;
  }
}

/**
 * A request bull-board answers (its page, assets and API), told by the route matched: the
 * router decodes %-escapes, so `/%71ueues/api/…` reaches bull-board too, and a test of
 * `request.url` alone would let it past the checks below.
 */
const isQueues = (request: FastifyRequest): boolean => request.routeOptions.url === '/queues' || request.routeOptions.url === '/queues/*';
/** bull-board's API rather than its page: for the log-in answer only (401 to a script, a redirect to a person). */
const isQueuesApi = (request: FastifyRequest): boolean =>
  request.routeOptions.url === '/queues/*' && /^api(?:\/|$)/.test(String((request.params as Record<string, unknown> | undefined)?.['*'] ?? ''));

/** Routes anyone may reach: the login form and the assets it needs. */
const PUBLIC = (url: string): boolean => url === '/login' || url.startsWith('/login?') || url.startsWith('/assets/');

/** Log-in and console forms are small: anything larger is refused (413) unread. */
export const CONSOLE_MAX_BODY_BYTES = 64 * 1024;

/** An error as a page. Never echoes internals: CSRF and rate-limit errors say what happened, a fault only that it happened. */
function errorPage({ status, detail, error }: ErrorAnswer): { type: string; body: string } {
  const code = (error as { code?: unknown } | null)?.code;
  const message = typeof code === 'string' && code.startsWith('FST_CSRF') ? 'The form expired or did not come from this console: reload the page and try again.' : status === 429 ? 'Too many attempts: wait a minute.' : detail;
  return { type: 'text/html', body: page('Error', undefined, html`<p class="error">${message}</p>`).text };
}

/** The server the console runs on: where TRAINSYNC_CONSOLE_PORT and TRAINSYNC_CONSOLE_HOST say, its errors as pages. */
function consoleServerOptions(deps: Pick<ConsoleDeps, 'config' | 'log'>): HttpServerOptions {
  return {
    name: 'console',
    port: deps.config.TRAINSYNC_CONSOLE_PORT,
    host: deps.config.TRAINSYNC_CONSOLE_HOST,
    bodyLimit: { bytes: CONSOLE_MAX_BODY_BYTES },
    // Forms and bull-board's JSON through Fastify's parsers.
    rawBodies: false,
    trustProxy: deps.config.TRAINSYNC_CONSOLE_TRUST_PROXY,
    errorBody: errorPage,
    faultDetail: 'Something went wrong; see the worker log.',
    notFoundDetail: 'not found',
    log: deps.log,
  };
}

/**
 * Starts the operator console (docs/operator.md, "Console"); undefined when no user is configured
 * (TRAINSYNC_CONSOLE_USERS), so it is off by default.
 */
export async function startConsole(deps: ConsoleDeps): Promise<ConsoleServer | undefined> {
  const users = deps.config.TRAINSYNC_CONSOLE_USERS;
  if (!users) return undefined;
  const server = await startHttpServer(consoleServer(deps, users));
  deps.log.info({ port: server.port, host: deps.config.TRAINSYNC_CONSOLE_HOST, users: users.length }, 'serving the console');
  return server;
}

/** The console's pages, log-in and sessions, CSRF, CSP and roles, and bull-board under /queues. */
export function consoleServer(deps: ConsoleDeps, users: readonly ConsoleUser[]): ServerDefinition {
  const plugin: ServerPlugin = async (server) => {
    // Loaded with the server (src/http/server-factory.ts loads Fastify itself the same way).
    const [{ default: fastifyCookie }, { default: fastifyFormbody }, { default: fastifyCsrf }] = await Promise.all([
      import('@fastify/cookie'),
      import('@fastify/formbody'),
      import('@fastify/csrf-protection'),
    ]);
    // Signs only the CSRF secret cookie; a restart asks for a fresh form, nothing more.
    await server.register(fastifyCookie, { secret: randomBytes(32).toString('hex') });
    await server.register(fastifyFormbody);
    await server.register(fastifyCsrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: 'trainsync_csrf',
      // Secure on the same rule as the session cookie: the request came by https (a trusted proxy's X-Forwarded-Proto).
      cookieOpts: { path: '/', httpOnly: true, sameSite: 'strict', signed: true, secure: 'auto' },
    });

    server.addHook('onSend', async (request, reply, payload) => {
      reply.header('content-security-policy', isQueues(request) ? QUEUES_CSP : CSP);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      reply.header('x-frame-options', 'DENY');
      if (!request.url.startsWith('/assets/')) reply.header('cache-control', 'no-store');
      return payload;
    });

    server.addHook('onRequest', async (request, reply) => {
      if (PUBLIC(request.url)) return;
      const session = await findSession(deps.scopes.unscoped, request.cookies[SESSION_COOKIE]);
      const user = session && users.find((u) => u.name === session.username && u.role === session.role);
      if (!session || !user) {
        if (request.method === 'GET' && !isQueuesApi(request)) return reply.redirect('/login');
        return reply.code(401).type('text/plain').send('log in first');
      }
      request.session = session;
      request.consoleUser = user;
      // bull-board shows and acts on every organisation's jobs: not there for a user limited to some (as if it did not exist).
      if (isQueues(request) && scopeOf(deps.config, session.org, user.orgs).limited) return reply.code(404).type('text/plain').send('not found');
      // bull-board's own actions (retry, clean, pause…; any request under it but a read): operators only, and only from a page of this console.
      if (isQueues(request) && request.method !== 'GET') {
        if (session.role !== 'operator') return reply.code(403).type('text/plain').send('operators only');
        if (request.headers['sec-fetch-site'] !== 'same-origin') return reply.code(403).type('text/plain').send('same-origin requests only');
        deps.log.info({ user: session.username, role: session.role, method: request.method, url: request.url }, 'console queue change');
        // One queue serves every organisation: the change is recorded without one.
        await recordConsoleChange(deps.scopes, { username: session.username, role: session.role, action: `queues ${request.method}`, target: request.url });
      }
    });

    const viewerOf = (request: FastifyRequest, reply: FastifyReply): Viewer => ({
      name: request.session!.username,
      role: request.session!.role,
      csrfToken: reply.generateCsrf(),
      scope: scopeOf(deps.config, request.session!.org, request.consoleUser!.orgs),
      path: request.url,
      flash: takeFlash(request, reply),
    });
    // One plugin of routes per page (routes/), each behind the hooks above (the session, the security headers).
    await server.register(assetRoutes);
    await server.register(loginRoutes, { deps, users });
    const pages: PageRoutesOptions = { deps, viewerOf };
    for (const routes of [overviewRoutes, runsRoutes, provisioningRoutes, peopleRoutes, webhooksRoutes, orgsRoutes]) await server.register(routes, pages);

    // bull-board's own logo leads to its own front page: the way back is ours, a link kept outside
    // the part its script redraws (style from /assets, as the CSP allows no inline style), and its menu.
    mountQueueBoard(server, deps.queue, '/queues', {
      head: '<link rel="stylesheet" href="/assets/queues.css">',
      bodyStart: '<a id="trainsync-back" href="/">&larr; Console</a>',
      links: [{ text: '← Back to the trainsync console', url: '/' }],
    });
  };
  return { options: consoleServerOptions(deps), plugin };
}
