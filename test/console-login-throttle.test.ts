import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createLoginThrottle, LOGIN_LIMITS, MAX_TRACKED, normaliseUserName } from '../src/console/login-throttle.ts';
import { startConsole, type ConsoleServer } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { parseTrustedProxies } from '../src/settings/trusted-proxies.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * The console's log-in throttle over HTTP: failed attempts are counted per user name whatever
 * address they come from (a rotating X-Forwarded-For buys no more guesses) and per client
 * address whatever names it tries; X-Forwarded-For is believed only from a proxy listed in
 * TRAINSYNC_CONSOLE_TRUST_PROXY, so from any other peer a rotating one changes nothing.
 */

const USER = { name: 'fay', password: 'throttle-pass-1234' };

let h: SyncHarness;
let behindProxy: ConsoleServer;
let untrusted: ConsoleServer;

/** A log-in form's CSRF token and cookie (they serve any number of posts). */
async function form(server: ConsoleServer): Promise<{ token: string; cookie: string }> {
  const page = await fetch(`http://127.0.0.1:${server.port}/login`);
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
  if (!token) throw new Error('no CSRF token on the log-in form');
  return { token, cookie };
}

/** One log-in attempt; its status (302 in, 401 refused, 429 throttled). */
async function attempt(server: ConsoleServer, csrf: { token: string; cookie: string }, username: string, password: string, forwardedFor?: string): Promise<number> {
  const answer = await fetch(`http://127.0.0.1:${server.port}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: csrf.cookie, 'content-type': 'application/x-www-form-urlencoded', ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    body: new URLSearchParams({ _csrf: csrf.token, username, password }),
  });
  await answer.arrayBuffer();
  return answer.status;
}

let address = 0;
/** An address not used before in this file (TEST-NET-3 and beyond). */
const freshAddress = (): string => {
  address += 1;
  return `203.0.${Math.floor(address / 250)}.${(address % 250) + 1}`;
};

beforeAll(async () => {
  const hash = await hashConsolePassword(USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({
    simulator: { seed: 17, sizes: { users: 3, courses: 1, results: 3 } },
    env: { TRAINSYNC_CONSOLE_USERS: `${USER.name}:viewer:${hash},other:viewer:${hash}`, TRAINSYNC_CONSOLE_PORT: '0', TRAINSYNC_CONSOLE_TRUST_PROXY: '127.0.0.1' },
  });
  const deps = { scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: () => { throw new Error('not used here'); } };
  behindProxy = (await startConsole({ ...deps, config: h.config }))!;
  // A proxy is trusted, but not the peer the test connects from.
  untrusted = (await startConsole({ ...deps, config: { ...h.config, TRAINSYNC_CONSOLE_TRUST_PROXY: ['10.9.9.9'] } }))!;
});

afterAll(async () => {
  await behindProxy?.close();
  await untrusted?.close();
  await h?.close();
});

describe('the console log-in throttle', () => {
  it('per user name across rotating addresses: after 5 failures the name is refused 429 from any address, the right password too; another user is not', async () => {
    const csrf = await form(behindProxy);
    for (let i = 0; i < LOGIN_LIMITS.perName.max; i++) {
      // Each from an address of its own, by a trusted proxy: the name is what is counted; its spellings are one name.
      expect(await attempt(behindProxy, csrf, ['fay', 'FAY', ' Fay ', 'ｆａｙ', 'fay'][i]!, `guess-${i}`, freshAddress())).toBe(401);
    }
    expect(await attempt(behindProxy, csrf, 'fay', 'guess-again', freshAddress())).toBe(429);
    expect(await attempt(behindProxy, csrf, USER.name, USER.password, freshAddress())).toBe(429);
    // Another account is not locked out by it.
    expect(await attempt(behindProxy, csrf, 'other', USER.password, freshAddress())).toBe(302);
  });

  it('from a trusted proxy: X-Forwarded-For is the address counted (one client throttled, the next not)', async () => {
    const csrf = await form(behindProxy);
    const client = freshAddress();
    for (let i = 0; i < LOGIN_LIMITS.perAddress.max; i++) expect(await attempt(behindProxy, csrf, `nobody-a-${i}`, 'wrong', client)).toBe(401);
    expect(await attempt(behindProxy, csrf, 'nobody-a-x', 'wrong', client)).toBe(429);
    // The proxy's other clients: each its own count. The last address of the list is the one the proxy saw.
    expect(await attempt(behindProxy, csrf, 'nobody-a-y', 'wrong', freshAddress())).toBe(401);
    expect(await attempt(behindProxy, csrf, 'nobody-a-z', 'wrong', `${freshAddress()}, ${client}`)).toBe(429);
  });

  it('from an untrusted peer: a rotating X-Forwarded-For changes nothing (the peer itself is counted)', async () => {
    const csrf = await form(untrusted);
    for (let i = 0; i < LOGIN_LIMITS.perAddress.max; i++) expect(await attempt(untrusted, csrf, `nobody-b-${i}`, 'wrong', freshAddress())).toBe(401);
    expect(await attempt(untrusted, csrf, 'nobody-b-x', 'wrong', freshAddress())).toBe(429);
    expect(await attempt(untrusted, csrf, 'nobody-b-y', 'wrong')).toBe(429);
  });
});

describe('the throttle and its settings, alone', () => {
  it('a window ends: attempts are allowed again', () => {
    let now = 0;
    const throttle = createLoginThrottle({ perName: { max: 2, windowMs: 1000 }, perAddress: { max: 100, windowMs: 1000 } }, () => now);
    throttle.failed('a', 'x');
    throttle.failed('b', 'X');
    expect(throttle.refusal('c', 'x')).toBe(1);
    now = 1000;
    expect(throttle.refusal('c', 'x')).toBeUndefined();
  });

  it('hostile names: one count per normalised name, never a throw, memory bounded', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 300 }), { maxLength: 40 }), (names) => {
        const throttle = createLoginThrottle({ perName: { max: 1, windowMs: 60_000 }, perAddress: { max: 10_000, windowMs: 60_000 } }, () => 0);
        for (const name of names) throttle.failed('a', name);
        for (const name of names) {
          expect(throttle.refusal('a', name)).toBe(60);
          expect(normaliseUserName(name).length).toBeLessThanOrEqual(200);
        }
      }),
    );
    // A flood of names: the oldest counters go first, the newest are kept.
    const throttle = createLoginThrottle({ perName: { max: 1, windowMs: 60_000 }, perAddress: { max: 10 ** 9, windowMs: 60_000 } }, () => 0);
    for (let i = 0; i <= MAX_TRACKED; i++) throttle.failed('a', `n${i}`);
    expect(throttle.refusal('a', 'n0')).toBeUndefined();
    expect(throttle.refusal('a', `n${MAX_TRACKED}`)).toBe(60);
  });

  it('TRAINSYNC_CONSOLE_TRUST_PROXY: addresses and CIDR ranges only; true (trust anyone) is refused naming the fix', () => {
    expect(parseTrustedProxies('false')).toBe(false);
    expect(parseTrustedProxies('')).toBe(false);
    expect(parseTrustedProxies('127.0.0.1, 10.0.0.0/8,::1,fd00::/8')).toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']);
    for (const bad of ['true', 'TRUE', '10.0.0.0/33', '::/129', 'proxy.local', '1.2.3.4,', '1.2.3.4/8/8', '*']) {
      expect(parseTrustedProxies(bad), bad).toMatch(/^false, or the proxies' addresses or CIDR ranges/);
    }
    const base = { DATABASE_URL: 'postgres://127.0.0.1/x', REDIS_URL: 'redis://127.0.0.1:6379', TRAINSYNC_API_URL: 'http://127.0.0.1:9', TRAINSYNC_API_KEY: 'k' };
    expect(loadConfig(base).TRAINSYNC_CONSOLE_TRUST_PROXY).toBe(false);
    expect(() => loadConfig({ ...base, TRAINSYNC_CONSOLE_TRUST_PROXY: 'true' })).toThrow(/TRAINSYNC_CONSOLE_TRUST_PROXY/);
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (value) => {
        const parsed = parseTrustedProxies(value);
        expect(parsed === false || typeof parsed === 'string' || (Array.isArray(parsed) && parsed.length > 0)).toBe(true);
      }),
    );
  });
});
