import { SESSION_COOKIE } from '../../src/console/server.ts';

/** The console over HTTP as a browser drives it (no browser): a session, its CSRF token, form posts. */
export interface ConsoleSession {
  get(path: string): Promise<{ status: number; text: string }>;
  /** Posts a form with the page's CSRF token (from `from`, a page of the console). */
  post(path: string, fields: Record<string, string>, from: string): Promise<{ status: number; text: string }>;
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
  let cookies = `${session}; ${csrfCookie}`;
  const get = async (path: string): Promise<{ status: number; text: string }> => {
    const page = await fetch(`${base}${path}`, { headers: { cookie: cookies }, redirect: 'manual' });
    // The CSRF secret cookie may be renewed with a page: keep the latest.
    const renewed = page.headers.getSetCookie().map((c) => c.split(';')[0]!).filter((c) => !c.startsWith(`${SESSION_COOKIE}=`));
    if (renewed.length > 0) cookies = `${session}; ${renewed.join('; ')}`;
    return { status: page.status, text: await page.text() };
  };
  return {
    get,
    cookies: () => cookies,
    async post(path, fields, from) {
      const page = await get(from);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
      const answer = await fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: cookies, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
      });
      return { status: answer.status, text: await answer.text() };
    },
  };
}

/** What a reader sees: the text without tags. */
export const visible = (page: string): string => page.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
