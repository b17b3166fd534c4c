import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createLogger, type Logger } from '../src/runtime/log.ts';
import { platformClientOptionsFromConfig } from '../src/platform/client.ts';
import { classifyResponse, classifyTransportError, DOCUMENTED_CODES, isRetryable, PlatformError } from '../src/platform/errors.ts';
import { apiBase, decodeBody } from '../src/platform/http.ts';
import { parseLoginUrl } from '../src/platform/login-url.ts';
import { nextPageFromLinks, paginate, validateEntities } from '../src/platform/paginate.ts';
import { parseRetryAfter, retryDelay } from '../src/platform/retry.ts';
import { resultSchema, userSchema, type Envelope } from '../src/platform/schemas.ts';

/** Pure parts of the platform client: classification, timing, paging rules, URL checks. */

function captureLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString('utf8'));
      callback();
    },
  });
  return { log: createLogger('debug', sink), lines };
}

const errorBody = (code: string): string => JSON.stringify({ code, message: `about ${code}`, details: [{ field: 'x' }] });

describe('classifyResponse', () => {
  it.each(DOCUMENTED_CODES.map((code) => [code]))('400 %s is permanent and keeps its code and details', (code) => {
    const error = classifyResponse({ method: 'POST', path: '/api/v2/users', status: 400, body: errorBody(code) });
    expect(error).toBeInstanceOf(PlatformError);
    expect(error.code).toBe(code);
    expect(error.status).toBe(400);
    expect(error.retryable).toBe(false);
    expect(error.details).toEqual([{ field: 'x' }]);
    expect(error.message).toContain(code);
    expect(isRetryable(error)).toBe(false);
  });

  it('normalises the misspelt COUSRE_NOT_FOUND and keeps the original', () => {
    const error = classifyResponse({ method: 'POST', path: '/api/v2/login/autostart', status: 400, body: errorBody('COUSRE_NOT_FOUND') });
    expect(error.code).toBe('COURSE_NOT_FOUND');
    expect(error.rawCode).toBe('COUSRE_NOT_FOUND');
    expect(error.retryable).toBe(false);
    const correct = classifyResponse({ method: 'POST', path: '/api/v2/login/autostart', status: 400, body: errorBody('COURSE_NOT_FOUND') });
    expect(correct.code).toBe('COURSE_NOT_FOUND');
    expect(correct.rawCode).toBeUndefined();
  });

  it.each([[401], [403]])('%i is UNAUTHORIZED, permanent, and names TRAINSYNC_API_KEY', (status) => {
    for (const body of ['', errorBody('UNAUTHORIZED'), '<html>nope</html>']) {
      const error = classifyResponse({ method: 'GET', path: '/api/v2/results', status, body });
      expect(error.code).toBe('UNAUTHORIZED');
      expect(error.status).toBe(status);
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('TRAINSYNC_API_KEY');
    }
  });

  it('a 400 that is not the documented shape is HTTP_400 and permanent', () => {
    for (const body of ['', 'Bad Request', '{"error":"x"}', '[1,2]', '{"code":42}']) {
      const error = classifyResponse({ method: 'GET', path: '/api/v2/results', status: 400, body });
      expect(error.code).toBe('HTTP_400');
      expect(error.retryable).toBe(false);
    }
  });

  it('every 5xx is retryable and unclassified, whatever its body', () => {
    for (const [status, body] of [
      [500, '<html>500</html>'],
      [502, 'Bad Gateway'],
      [503, '{"message":"Service Unavailable","status":503}'],
      [500, errorBody('USER_NOT_FOUND')],
    ] as const) {
      const error = classifyResponse({ method: 'GET', path: '/api/v2/results', status, body });
      expect(error.code).toBe(`HTTP_${status}`);
      expect(error.retryable).toBe(true);
    }
  });

  it('429 is retryable and carries Retry-After', () => {
    const error = classifyResponse({ method: 'GET', path: '/api/v2/results', status: 429, body: 'Too Many Requests', retryAfterMs: 2000 });
    expect(error.code).toBe('HTTP_429');
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(2000);
  });

  it('other 4xx without the error shape are permanent HTTP_<status>', () => {
    const error = classifyResponse({ method: 'GET', path: '/api/v2/users', status: 404, body: '' });
    expect(error).toMatchObject({ code: 'HTTP_404', status: 404, retryable: false });
  });
});

describe('classifyTransportError', () => {
  it('timeouts and resets are retryable; the cause keeps no request options', () => {
    const timeout = Object.assign(new Error("Timeout awaiting 'request' for 100ms"), { name: 'TimeoutError', code: 'ETIMEDOUT', options: { headers: { authorization: 'Bearer k' } } });
    const t = classifyTransportError(timeout, 'GET', '/api/v2/results');
    expect(t).toMatchObject({ code: 'TIMEOUT', retryable: true, status: undefined });
    expect(JSON.stringify(t.cause)).not.toContain('Bearer');
    expect(Object.keys(t.cause as object)).not.toContain('options');
    const reset = Object.assign(new Error('socket hang up'), { name: 'RequestError', code: 'ECONNRESET' });
    expect(classifyTransportError(reset, 'GET', '/x')).toMatchObject({ code: 'NETWORK', retryable: true });
    expect(isRetryable(new Error('plain'))).toBe(false);
    expect(isRetryable('a string')).toBe(false);
  });
});

describe('Retry-After and backoff', () => {
  it('reads delta seconds and HTTP dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('0.5', now)).toBe(500);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });

  it('full jitter grows exponentially, honours Retry-After as a floor, and is capped', () => {
    const policy = { retries: 6, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(retryDelay(1, policy, undefined, () => 0.999)).toBe(99);
    expect(retryDelay(3, policy, undefined, () => 0.999)).toBe(399);
    expect(retryDelay(3, policy, undefined, () => 0)).toBe(0);
    expect(retryDelay(10, policy, undefined, () => 0.999)).toBe(999);
    expect(retryDelay(1, policy, 700, () => 0)).toBe(700);
    expect(retryDelay(1, policy, 5000, () => 0)).toBe(1000);
  });
});

describe('parseLoginUrl', () => {
  const good = 'https://t.example/account/login?token=abc&userId=u1&orgId=o1&moduleId=m1';
  it('accepts a URL with token, userId, moduleId and orgId in any order, even JSON-quoted', () => {
    expect(parseLoginUrl(`${good}\n`).searchParams.get('moduleId')).toBe('m1');
    expect(parseLoginUrl(JSON.stringify(good)).host).toBe('t.example');
    // The vendor's garbled sample repeats moduleId; keys are checked, not positions.
    expect(parseLoginUrl('https://t.example/l?moduleId=m&token=t&moduleId=m&orgId=o&userId=u').href).toContain('token=t');
  });

  it('rejects a body that is not such a URL, without echoing the token', () => {
    for (const body of ['not a url', 'https://t.example/account/login?token=secret123&userId=u1&orgId=o1', '{"url":"x"}', 'ftp://x/?token=a&userId=b&orgId=c&moduleId=d']) {
      let caught: unknown;
      try {
        parseLoginUrl(body);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(PlatformError);
      expect((caught as PlatformError).code).toBe('MALFORMED_RESPONSE');
      expect((caught as PlatformError).message).not.toContain('secret123');
    }
  });
});

describe('platformClientOptionsFromConfig', () => {
  it('maps the config and refuses a missing platform URL or key', () => {
    const { log } = captureLog();
    const config = loadConfig({ TRAINSYNC_API_URL: 'https://t.example', TRAINSYNC_API_KEY: 'k', TRAINSYNC_REQUESTS_PER_SECOND: '7', TRAINSYNC_QUEUE_PREFIX: 'p1' });
    expect(platformClientOptionsFromConfig(config, config.orgs[0]!, log, { retries: 1 })).toMatchObject({
      apiUrl: 'https://t.example',
      apiKey: 'k',
      requestsPerSecond: 7,
      keyPrefix: 'p1',
      redisUrl: 'redis://127.0.0.1:6379',
      timeoutMs: 30_000,
      connectTimeoutMs: 5_000,
      retries: 1,
      retryMaxDelayMs: 60_000,
    });
    const empty = loadConfig({});
    expect(() => platformClientOptionsFromConfig(empty, empty.orgs[0]!, log)).toThrow(ConfigError);
  });
});

describe('apiBase', () => {
  it('appends /api/v2/ to the configured origin and keeps a base path', () => {
    expect(apiBase('http://127.0.0.1:4000')).toEqual({ origin: 'http://127.0.0.1:4000', prefixUrl: 'http://127.0.0.1:4000/api/v2/' });
    expect(apiBase('https://t.example/tenant/')).toEqual({ origin: 'https://t.example', prefixUrl: 'https://t.example/tenant/api/v2/' });
  });
});

describe('decodeBody', () => {
  it('reads the bytes as UTF-8 across chunks, a character split between two included, and skips a leading BOM', () => {
    const bytes = Buffer.from('\ufeff{"name":"Zoë 😀"}', 'utf8');
    expect(decodeBody([bytes], bytes.length)).toBe('{"name":"Zoë 😀"}');
    const split = [bytes.subarray(0, 2), bytes.subarray(2, 15), bytes.subarray(15)];
    expect(decodeBody(split, bytes.length)).toBe('{"name":"Zoë 😀"}');
    expect(decodeBody([Buffer.from('{}')], 2)).toBe('{}');
    expect(decodeBody([], 0)).toBe('');
  });
});

const RESULT = {
  id: '3f2504e0-4f89-11d3-9a0c-0305e82c3301',
  userId: '3f2504e0-4f89-11d3-9a0c-0305e82c3302',
  courseId: '3f2504e0-4f89-11d3-9a0c-0305e82c3303',
  isComplete: true,
  dateCompleted: '2024-02-03T04:05:06.789Z',
  score: 5,
  maximumScore: 10,
  passRate: 50,
  courseType: 'SINGLE_COURSE',
  resultFilters: [],
  extraVendorField: 'kept',
};

describe('validateEntities', () => {
  it('keeps good records (unknown fields too) and sets bad ones aside, naming the field', () => {
    const { records, problems } = validateEntities('results', 4, [RESULT, { ...RESULT, id: 'nope' }, { ...RESULT, score: '7' }, 'junk'], resultSchema);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ extraVendorField: 'kept' });
    expect(problems.map((p) => [p.resource, p.page, p.index])).toEqual([
      ['results', 4, 1],
      ['results', 4, 2],
      ['results', 4, 3],
    ]);
    expect(problems[0]!.message).toMatch(/^id: /);
    expect(problems[1]!.message).toMatch(/^score: /);
    expect(problems[1]!.raw).toEqual({ ...RESULT, score: '7' });
  });
});

describe('nextPageFromLinks', () => {
  it('takes only the page number and logs a foreign host', () => {
    const { log, lines } = captureLog();
    const ctx = { origin: 'http://127.0.0.1:4000', resource: 'results', log };
    expect(nextPageFromLinks([{ type: 'Next Page', href: 'http://127.0.0.1:4000/api/v2/results?startDate=x&page=3' }], ctx)).toBe(3);
    expect(lines).toHaveLength(0);
    expect(nextPageFromLinks([{ type: 'Previous Page', href: 'http://127.0.0.1:4000/api/v2/results?page=1' }], ctx)).toBeUndefined();
    expect(nextPageFromLinks([], ctx)).toBeUndefined();
    expect(nextPageFromLinks([{ type: 'Next Page', href: 'https://evil.example:8443/api/v2/results?page=9' }], ctx)).toBe(9);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, foreignHost: 'evil.example:8443' });
    expect(() => nextPageFromLinks([{ type: 'Next Page', href: '/api/v2/results?page=zero' }], ctx)).toThrow(PlatformError);
  });

  it('reads the page number as URLSearchParams does, whether the query needs decoding or not', () => {
    const { log } = captureLog();
    const ctx = { origin: 'http://127.0.0.1:4000', resource: 'results', log };
    const hrefs = [
      '?page=3',
      '?pages=4&page=5',
      '?xpage=6&page=7&page=8',
      '?&&page=9&',
      '?page=10#page=11',
      '?page',
      '?page=',
      '?paging=1',
      '',
      '?pag%65=12',
      '?page=%31%33',
      '?page=+14',
      '?a=b%26page%3D15&page=16',
      '?page=1=7',
    ];
    for (const query of hrefs) {
      const href = `http://127.0.0.1:4000/api/v2/results${query}`;
      const expected = new URL(href).searchParams.get('page');
      const valid = expected !== null && /^\d+$/.test(expected) && Number(expected) >= 1;
      if (valid) expect(nextPageFromLinks([{ type: 'Next Page', href }], ctx), href).toBe(Number(expected));
      else expect(() => nextPageFromLinks([{ type: 'Next Page', href }], ctx), href).toThrow(PlatformError);
    }
  });
});

/** An in-memory platform for the paging rules (the HTTP path is tested against the simulator). */
function pages(bodies: Record<number, Partial<Envelope> & { entities: unknown[] }>): { fetched: number[]; fetchPage: (page: number) => Promise<Envelope> } {
  const fetched: number[] = [];
  return {
    fetched,
    fetchPage: async (page) => {
      fetched.push(page);
      const body = bodies[page] ?? { entities: [] };
      return { links: [], ...body } as Envelope;
    },
  };
}

const next = (page: number): Envelope['links'] => [{ type: 'Next Page', href: `http://h:1/api/v2/results?page=${page}` }];

async function walk(options: Omit<Parameters<typeof paginate<unknown>>[0], 'log' | 'origin' | 'resource' | 'schema'>): Promise<number[]> {
  const { log } = captureLog();
  const seen: number[] = [];
  for await (const page of paginate({ resource: 'results', schema: resultSchema, origin: 'http://h:1', log, ...options })) seen.push(page.page);
  return seen;
}

describe('paginate', () => {
  it('links mode follows Next Page links and stops without one', async () => {
    const p = pages({ 1: { entities: [RESULT, RESULT], links: next(2), totalEntities: 3 }, 2: { entities: [RESULT], totalEntities: 3 } });
    expect(await walk({ mode: 'links', fetchPage: p.fetchPage })).toEqual([1, 2]);
  });

  it('refuses a link back to a page already read', async () => {
    const p = pages({ 1: { entities: [RESULT], links: next(2) }, 2: { entities: [RESULT], links: next(1) } });
    await expect(walk({ mode: 'links', fetchPage: p.fetchPage })).rejects.toMatchObject({ code: 'PAGINATION_LOOP', retryable: false });
    expect(p.fetched).toEqual([1, 2]);
  });

  it('refuses more pages than totalEntities allows', async () => {
    const p = pages({
      1: { entities: [RESULT, RESULT], links: next(2), totalEntities: 4 },
      2: { entities: [RESULT, RESULT], links: next(3), totalEntities: 4 },
      3: { entities: [RESULT], links: next(4), totalEntities: 4 },
    });
    await expect(walk({ mode: 'links', fetchPage: p.fetchPage })).rejects.toMatchObject({ code: 'PAGINATION_LOOP' });
    expect(p.fetched).toEqual([1, 2]);
  });

  it('refuses a server that answers another page than asked', async () => {
    const p = pages({ 1: { entities: [RESULT], links: next(2), page: 1 }, 2: { entities: [RESULT], links: next(3), page: 1 } });
    await expect(walk({ mode: 'links', fetchPage: p.fetchPage })).rejects.toMatchObject({ code: 'PAGINATION_LOOP' });
  });

  it('count mode stops at a short page, an empty page, or the reported total', async () => {
    const short = pages({ 1: { entities: [RESULT, RESULT, RESULT] }, 2: { entities: [RESULT, RESULT, RESULT] }, 3: { entities: [RESULT] } });
    expect(await walk({ mode: 'count', fetchPage: short.fetchPage })).toEqual([1, 2, 3]);
    const exact = pages({ 1: { entities: [RESULT, RESULT], totalEntities: 4 }, 2: { entities: [RESULT, RESULT], totalEntities: 4 } });
    expect(await walk({ mode: 'count', fetchPage: exact.fetchPage })).toEqual([1, 2]);
    const unknownTotal = pages({ 1: { entities: [RESULT, RESULT] }, 2: { entities: [RESULT, RESULT] } });
    expect(await walk({ mode: 'count', fetchPage: unknownTotal.fetchPage })).toEqual([1, 2, 3]);
    expect(unknownTotal.fetched).toEqual([1, 2, 3]);
  });

  it('resumes at startPage and validates users per record', async () => {
    const { log } = captureLog();
    const user = { id: RESULT.id, email: 'a@b.c', hasAccess: true };
    const p = pages({ 3: { entities: [user, { ...user, hasAccess: 'yes' }], totalEntities: 7 }, 4: { entities: [user], totalEntities: 7 } });
    const got: Array<[number, number, number]> = [];
    for await (const page of paginate({ resource: 'users', schema: userSchema, origin: 'http://h:1', log, mode: 'count', startPage: 3, fetchPage: p.fetchPage })) {
      got.push([page.page, page.records.length, page.problems.length]);
    }
    expect(got).toEqual([
      [3, 1, 1],
      [4, 1, 0],
    ]);
    expect(p.fetched).toEqual([3, 4]);
  });
});
