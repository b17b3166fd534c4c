import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../../http/http-error.ts';
import { verifyConsolePassword, type ConsoleUser } from '../../settings/console-users.ts';
import type { ConsoleDeps } from '../deps.ts';
import { html, type SafeHtml } from '../html.ts';
import { page } from '../layout.ts';
import { createLoginThrottle } from '../login-throttle.ts';
import { createSession, endSession, SESSION_COOKIE } from '../sessions.ts';

/** What the log-in routes are registered with: the configured users. */
export interface LoginRoutesOptions {
  deps: ConsoleDeps;
  users: readonly ConsoleUser[];
}

/** Log-in (`GET`/`POST /login`, throttled per name and address) and log-out (`POST /logout`): the only routes before a session. */
export const loginRoutes: FastifyPluginAsync<LoginRoutesOptions> = async (server, { deps, users }) => {
  const secure = (request: FastifyRequest): boolean => request.protocol === 'https';

  const loginPage = (reply: FastifyReply, message?: string): SafeHtml =>
    page('Log in', undefined, html`${message ? html`<p class="error">${message}</p>` : ''}
  <form method="post" action="/login" id="login"><input type="hidden" name="_csrf" value="${reply.generateCsrf()}">
  <p><label>user <input name="username" autocomplete="username" required></label></p>
  <p><label>password <input name="password" type="password" autocomplete="current-password" required></label></p>
  <button type="submit">Log in</button></form>`);

  server.get('/login', async (_request, reply) => reply.type('text/html').send(loginPage(reply).text));

  // Per user name and per address (request.ip: the peer, or what a configured proxy says it forwarded for).
  const throttle = createLoginThrottle();
  server.post<{ Body: { username?: string; password?: string } }>(
    '/login',
    { preHandler: server.csrfProtection },
    async (request, reply) => {
      const name = String(request.body?.username ?? '');
      const password = String(request.body?.password ?? '');
      const wait = throttle.refusal(request.ip, name);
      if (wait !== undefined) {
        deps.log.warn({ user: name, ip: request.ip }, 'console log-in throttled');
        throw new HttpError(429, 'too many attempts', { 'retry-after': String(wait) });
      }
      const user: ConsoleUser | undefined = users.find((u) => u.name === name);
      // A hash is checked even for an unknown name, so timing does not tell which names exist.
      const ok = await verifyConsolePassword(password, user?.hash ?? users[0]!.hash);
      if (!user || !ok) {
        throttle.failed(request.ip, name);
        deps.log.warn({ user: name, ip: request.ip }, 'console log-in refused');
        return reply.code(401).type('text/html').send(loginPage(reply, 'Wrong user name or password.').text);
      }
      const token = await createSession(deps.scopes.unscoped, user, deps.config.TRAINSYNC_CONSOLE_SESSION_MINUTES);
      reply.setCookie(SESSION_COOKIE, token, {
        path: '/',
        httpOnly: true,
        sameSite: 'strict',
        secure: secure(request),
        maxAge: deps.config.TRAINSYNC_CONSOLE_SESSION_MINUTES * 60,
      });
      deps.log.info({ user: user.name, role: user.role }, 'console log-in');
      return reply.redirect('/');
    },
  );

  server.post('/logout', { preHandler: server.csrfProtection }, async (request, reply) => {
    await endSession(deps.scopes.unscoped, request.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/login');
  });
};
