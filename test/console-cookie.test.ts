import { owner } from './helpers/owner.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE, startConsole, type ConsoleServer } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * The session cookie over HTTP (no browser): `Secure` behind TLS, which for the console
 * (plain HTTP on loopback) means a trusted proxy (TRAINSYNC_CONSOLE_TRUST_PROXY=127.0.0.1, its address) that
 * says `X-Forwarded-Proto: https`; never on plain HTTP, nor from a client's own header when
 * no proxy is trusted. Always HttpOnly, SameSite=Strict and expiring (README, "Console").
 */

const USER = { name: 'tess', password: 'tls-cookie-pass-1234' };
const SESSION_MINUTES = 30;

let h: SyncHarness;
let behindProxy: ConsoleServer;
let direct: ConsoleServer;

/** A Set-Cookie header's attributes, names in lower case. */
function attributesOf(cookie: string): Map<string, string> {
  return new Map(cookie.split(';').map((part) => {
    const [name, ...value] = part.trim().split('=');
    return [name!.toLowerCase(), value.join('=')] as const;
  }));
}

/** The log-in form's CSRF secret cookie: its attributes. */
async function csrfCookie(server: ConsoleServer, headers: Record<string, string> = {}): Promise<Map<string, string>> {
  const form = await fetch(`http://127.0.0.1:${server.port}/login`, { headers });
  await form.text();
  const cookie = form.headers.getSetCookie().find((c) => c.startsWith('trainsync_csrf='));
  expect(cookie).toBeDefined();
  return attributesOf(cookie!);
}

/** Logs in through the form (its CSRF token and cookie included); returns the session cookie's attributes, names in lower case. */
async function sessionCookie(server: ConsoleServer, headers: Record<string, string> = {}): Promise<Map<string, string>> {
  const base = `http://127.0.0.1:${server.port}`;
  const form = await fetch(`${base}/login`, { headers });
  const csrfCookie = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  expect(token).toBeDefined();
  const answer = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...headers, cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: token!, username: USER.name, password: USER.password }),
  });
  expect(answer.status).toBe(302);
  const cookie = answer.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  expect(cookie).toBeDefined();
  // The session works: the home page answers instead of sending to the log-in form.
  const home = await fetch(`${base}/`, { headers: { ...headers, cookie: cookie!.split(';')[0]! }, redirect: 'manual' });
  expect(home.status).toBe(200);
  return attributesOf(cookie!);
}

function expectAlwaysSet(attributes: Map<string, string>): void {
  expect(attributes.has('httponly')).toBe(true);
  expect(attributes.get('samesite')).toBe('Strict');
  expect(attributes.get('path')).toBe('/');
  expect(attributes.get('max-age')).toBe(String(SESSION_MINUTES * 60));
}

beforeAll(async () => {
  const hash = await hashConsolePassword(USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({
    simulator: { seed: 5, sizes: { users: 3, courses: 1, results: 3 } },
    env: {
      TRAINSYNC_CONSOLE_USERS: `${USER.name}:viewer:${hash}`,
      TRAINSYNC_CONSOLE_PORT: '0',
      TRAINSYNC_CONSOLE_SESSION_MINUTES: String(SESSION_MINUTES),
      TRAINSYNC_CONSOLE_TRUST_PROXY: '127.0.0.1',
    },
  });
  const deps = { scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: () => { throw new Error('not used here'); } };
  behindProxy = (await startConsole({ ...deps, config: h.config }))!;
  direct = (await startConsole({ ...deps, config: { ...h.config, TRAINSYNC_CONSOLE_TRUST_PROXY: false } }))!;
});

afterAll(async () => {
  await behindProxy?.close();
  await direct?.close();
  await h?.close();
});

describe('the console session cookie', () => {
  it('behind a trusted TLS proxy (X-Forwarded-Proto: https) is Secure, HttpOnly, SameSite=Strict and expiring', async () => {
    const attributes = await sessionCookie(behindProxy, { 'x-forwarded-proto': 'https' });
    expect(attributes.has('secure')).toBe(true);
    expectAlwaysSet(attributes);
  });

  it('and the CSRF secret cookie follows the same rule: Secure behind the TLS proxy only, always HttpOnly and SameSite=Strict', async () => {
    const behindTls = await csrfCookie(behindProxy, { 'x-forwarded-proto': 'https' });
    expect(behindTls.has('secure')).toBe(true);
    const plain = await csrfCookie(behindProxy);
    const spoofed = await csrfCookie(direct, { 'x-forwarded-proto': 'https' });
    for (const attributes of [behindTls, plain, spoofed]) {
      expect(attributes.has('httponly')).toBe(true);
      expect(attributes.get('samesite')).toBe('Strict');
    }
    expect(plain.has('secure')).toBe(false);
    expect(spoofed.has('secure')).toBe(false);
  });

  it('on plain HTTP (no proxy marker) is not Secure, and still HttpOnly, SameSite=Strict and expiring', async () => {
    const attributes = await sessionCookie(behindProxy);
    expect(attributes.has('secure')).toBe(false);
    expectAlwaysSet(attributes);
  });

  it('ignores a client\'s own X-Forwarded-Proto when no proxy is trusted (the default)', async () => {
    const attributes = await sessionCookie(direct, { 'x-forwarded-proto': 'https' });
    expect(attributes.has('secure')).toBe(false);
    expectAlwaysSet(attributes);
  });
});
