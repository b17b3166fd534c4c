import { SESSION_COOKIE } from '../../src/console/server.ts';

/** The console over HTTP as a browser drives it (no browser): a session, its CSRF token, form posts. */
export interface ConsoleSession {
  get(path: string): Promise<{ status: number; text: string; location?: string }>;
  /** Posts a form with the page's CSRF token (from `from`, a page of the console). */
  post(path: string, fields: Record<string, string>, from: string): Promise<{ status: number; text: string; location?: string }>;
  /** The session's cookies, for a request of another kind (bull-board's API calls). */
  cookies(): string;
}

/** Logs in through the form (CSRF token and cookie included). */
export async function consoleSession(base: string, user: { name: string; password: string }): Promise<ConsoleSession> {
  const form = await fetch(`${base}/login`);
  const csrfCookie = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  const answer = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: token ?? '', username: user.name, password: user.password }),
  });
  if (answer.status !== 302) throw new Error(`console log-in of ${user.name} answered ${answer.status}`);
  const session = answer.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`))!.split(';')[0]!;
  // Every cookie by name, as a browser keeps them: a response that sets one replaces it, one that clears it removes it.
  const jar = new Map<string, string>();
  const keep = (setCookies: string[]): void => {
    for (const line of setCookies) {
      const pair = line.split(';')[0]!;
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (name === SESSION_COOKIE) continue;
      if (value === '' || /;\s*expires=Thu, 01 Jan 1970/i.test(line) || /;\s*max-age=0(;|$)/i.test(line)) jar.delete(name);
      else jar.set(name, pair);
    }
  };
  keep(form.headers.getSetCookie());
  const cookieHeader = (): string => [session, ...jar.values()].join('; ');
  const get = async (path: string): Promise<{ status: number; text: string; location?: string }> => {
    const page = await fetch(`${base}${path}`, { headers: { cookie: cookieHeader() }, redirect: 'manual' });
    // The CSRF secret cookie may be renewed with a page: keep the latest.
    keep(page.headers.getSetCookie());
    return { status: page.status, text: await page.text(), ...(page.headers.get('location') ? { location: page.headers.get('location')! } : {}) };
  };
  return {
    get,
    cookies: cookieHeader,
    async post(path, fields, from) {
      const page = await get(from);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
      const answer = await fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
      });
      // A change's result may ride on a cookie across its redirect (Post/Redirect/Get).
      keep(answer.headers.getSetCookie());
      return { status: answer.status, text: await answer.text(), ...(answer.headers.get('location') ? { location: answer.headers.get('location')! } : {}) };
    },
  };
}

/** What a reader sees: the text without tags. */
export const visible = (page: string): string => page.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
