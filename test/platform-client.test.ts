import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPlatformClient, type PlatformClientOptions } from '../src/platform/client.ts';
import { RESULTS, resultsQuery } from '../src/platform/listings.ts';
import { PlatformError } from '../src/platform/errors.ts';
import type { Page, PlatformClient, RequestEvent } from '../src/platform/types.ts';
import {
  FOREIGN_EMAIL_DOMAIN,
  groupMembers,
  NO_FAULTS,
  ORG_EMAIL_DOMAIN,
  setUserLocked,
  startSimulator,
  userAccount,
  type RunningSimulator,
} from '../src/simulator/index.ts';
import { capturingLogger } from './helpers/log-capture.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * The platform client over real HTTP against the simulator (and, for odd page sizes,
 * a foreign host and connection resets, two tiny node:http servers of our own).
 */

const PASSWORD = 'Correct-Horse-42';
const { log, lines: logLines } = capturingLogger('debug');

let sim: RunningSimulator;
let prefix: string;
let client: PlatformClient;
const events: RequestEvent[] = [];
const clients: PlatformClient[] = [];

function makeClient(apiUrl: string, apiKey: string, extra: Partial<PlatformClientOptions> = {}): PlatformClient {
  const made = createPlatformClient({
    apiUrl,
    apiKey,
    log,
    redisUrl: REDIS_URL,
    keyPrefix: prefix,
    requestsPerSecond: 2000,
    retryBaseDelayMs: 5,
    retryMaxDelayMs: 3000,
    timeoutMs: 5000,
    ...extra,
  });
  clients.push(made);
  return made;
}

async function collect<T>(iterable: AsyncIterable<Page<T>>): Promise<Array<Page<T>>> {
  const pages: Array<Page<T>> = [];
  for await (const page of iterable) pages.push(page);
  return pages;
}

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PlatformError) return error;
    throw error;
  }
  throw new Error('expected a PlatformError');
}

const ids = (pages: Array<Page<{ id: string }>>): string[] => pages.flatMap((p) => p.records.map((r) => r.id));

beforeAll(async () => {
  prefix = testPrefix();
  sim = await startSimulator({ seed: 11, sizes: { results: 1500, users: 120 } });
  client = makeClient(sim.url, sim.apiKey, { onRequest: (e) => events.push(e) });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await sim?.close();
  await dropPrefix(prefix);
});

beforeEach(() => {
  sim.setFaults({ ...NO_FAULTS });
  sim.resetRequests();
});

describe('reporting endpoints', () => {
  it('lists courses, with and without filters', async () => {
    const all = await collect(client.listCourses());
    expect(ids(all).sort()).toEqual(sim.state.courses.map((c) => c.id).sort());
    const type = sim.state.courses[0]!.categories[0]!.type;
    const byType = await collect(client.listCourses({ categoryType: type }));
    const expected = sim.state.courses.filter((c) => c.categories.some((k) => k.type === type)).map((c) => c.id);
    expect(ids(byType).sort()).toEqual(expected.sort());
    expect(expected.length).toBeLessThan(sim.state.courses.length);
    const byName = await collect(client.listCourses({ name: 'Fire Safety' }));
    const named = byName.flatMap((p) => p.records);
    expect(named.length).toBeGreaterThan(0);
    expect(named.every((c) => c.name.includes('Fire Safety'))).toBe(true);
    expect(sim.requests.length).toBeGreaterThan(0);
    expect(sim.requests.every((r) => r.authorized)).toBe(true);
  });

  it('lists filters', async () => {
    const pages = await collect(client.listFilters());
    expect(ids(pages).sort()).toEqual(sim.state.filters.map((f) => f.id).sort());
    expect(pages[0]!.records[0]!.answers.length).toBeGreaterThan(0);
  });

  it('walks results pages by Next Page links; totals and ids agree', async () => {
    const pages = await collect(client.listResults({ startDate: '2024-01-01', endDate: '2024-07-01' }));
    const total = pages[0]!.totalEntities!;
    expect(total).toBeGreaterThan(200);
    expect(pages.length).toBe(Math.ceil(total / 50));
    const got = ids(pages);
    expect(new Set(got).size).toBe(total);
    expect(pages.every((p) => p.problems.length === 0)).toBe(true);
    // Every request carried the caller's own query.
    for (const r of sim.requests) expect(new URLSearchParams(r.query).get('startDate')).toBe('2024-01-01');
    expect(events.some((e) => e.path === '/api/v2/results' && e.status === 200 && e.attempt === 1)).toBe(true);
  });

  it('sends reporting filters as repeated reportingFilters[] and resumes at startPage', async () => {
    const answers = sim.state.filters.flatMap((f) => f.answers.map((a) => a.id)).slice(0, 2);
    const pages = await collect(client.listResults({ reportingFilters: answers }));
    const query = new URLSearchParams(sim.requests[0]!.query);
    expect(query.getAll('reportingFilters[]')).toEqual(answers);
    const got = pages.flatMap((p) => p.records);
    expect(got.length).toBeGreaterThan(0);
    expect(got.every((r) => r.resultFilters.some((f) => answers.includes(f)))).toBe(true);

    const everything = await collect(client.listResults({}));
    const resumed = await collect(client.listResults({}, { startPage: 3 }));
    expect(resumed[0]!.page).toBe(3);
    expect(ids(resumed)).toEqual(ids(everything.slice(2)));
  });

  it('gets one result, the seats, and users by filter', async () => {
    const wanted = sim.state.results[17]!;
    const result = await client.getResult(wanted.id.toUpperCase());
    expect(result).toMatchObject({ id: wanted.id, userId: wanted.userId, courseId: wanted.courseId, score: wanted.score });

    const seats = await client.getSeats();
    expect(seats.totalSeats).toBe(sim.state.seats.totalSeats);
    expect(seats.seatsInUse).toBe(sim.state.users.filter((u) => u.hasAccess).length);

    const users = await collect(client.listUsers());
    expect(ids(users).sort()).toEqual(sim.state.users.map((u) => u.id).sort());
    expect(users.map((p) => p.records.length)).toEqual([50, 50, 20]);

    const someone = sim.state.users[42]!;
    expect(ids(await collect(client.listUsers({ userId: someone.id })))).toEqual([someone.id]);
    expect(ids(await collect(client.listUsers({ orgId: someone.organisationIdentifier! })))).toContain(someone.id);
    expect(ids(await collect(client.listUsers({ email: someone.email })))).toEqual([someone.id]);
  });
});

describe('provisioning endpoints', () => {
  it('creates a user (role sent) and finds it by exact, case-insensitive e-mail', async () => {
    const decoy = `xpat.lee${ORG_EMAIL_DOMAIN}`;
    const email = `pat.lee${ORG_EMAIL_DOMAIN}`;
    await client.createUser({ email: decoy, firstName: 'X', lastName: 'Lee', role: 'USER' });
    await client.createUser({ email, firstName: 'Pat', lastName: 'Lee', role: 'ADMIN', organisationIdentifier: 'E-PAT' });
    expect(sim.requests.filter((r) => r.method === 'POST').map((r) => r.status)).toEqual([204, 204]);
    const created = sim.state.users.find((u) => u.email === email)!;
    expect(created).toMatchObject({ role: 'ADMIN', organisationIdentifier: 'E-PAT', accountType: 'API' });

    sim.resetRequests();
    const found = await client.findUserByEmail(email.toUpperCase());
    expect(found?.id).toBe(created.id);
    // The platform's filter is partial: the decoy came back too, and was skipped.
    expect(new URLSearchParams(sim.requests[0]!.query).get('email')).toBe(email);
    expect(await client.findUserByEmail(`nobody${ORG_EMAIL_DOMAIN}`)).toBeUndefined();
  });

  it('sets a password without logging it', async () => {
    const user = sim.state.users.find((u) => u.accountType === 'API')!;
    await client.setPassword(user.email, PASSWORD);
    expect(userAccount(sim.state, user.id).passwordSet).toBe(true);
    expect(new URLSearchParams(sim.requests[0]!.query).get('userIdentifier')).toBe(user.email);
    expect(logLines.join('')).not.toContain(PASSWORD);
  });

  it('gets an autostart log-in URL with token, userId, moduleId and orgId', async () => {
    const user = sim.state.users.find((u) => u.hasAccess)!;
    const course = sim.state.courses[3]!;
    const url = await client.getAutostartLoginUrl(user.email, course.id);
    expect(url).toBeInstanceOf(URL);
    expect(url.searchParams.get('userId')).toBe(user.id);
    expect(url.searchParams.get('moduleId')).toBe(course.id);
    expect(url.searchParams.get('orgId')).toBe(sim.state.organisationId);
    expect(url.searchParams.get('token')).toBeTruthy();
    expect(sim.requests[0]).toMatchObject({ method: 'POST', path: '/api/v2/login/autostart', status: 200 });
  });

  it('disables and enables a user, adds to and removes from a group', async () => {
    const user = sim.state.users.find((u) => u.hasAccess)!;
    await client.disableUser(user.id);
    expect(user.hasAccess).toBe(false);
    await client.disableUser(user.id);
    await client.enableUser(user.id);
    expect(user.hasAccess).toBe(true);

    const group = sim.state.groups[0]!;
    const outsider = sim.state.users.find((u) => !group.memberIds.has(u.id))!;
    await client.addToGroup(group.id, outsider.id);
    expect(groupMembers(sim.state, group.id)).toContain(outsider.id);
    await client.removeFromGroup(group.id, outsider.id);
    expect(groupMembers(sim.state, group.id)).not.toContain(outsider.id);
    expect(sim.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['PATCH 204', 'PATCH 204', 'PATCH 204', 'POST 204', 'DELETE 204']);
  });
});

describe('error classification over HTTP', () => {
  let other: RunningSimulator;
  let otherClient: PlatformClient;
  beforeAll(async () => {
    // No seats left, no unlimited plan, no groups.
    other = await startSimulator({ seed: 5, sizes: { users: 10, results: 0, groups: 0 }, totalSeats: 1, unlimitedPlan: false });
    otherClient = makeClient(other.url, other.apiKey);
  });
  afterAll(async () => {
    await other?.close();
  });

  it('maps each documented 400 to its code, permanent, sent once', async () => {
    const api = sim.state.users.find((u) => u.accountType === 'API' && u.hasAccess)!;
    const sso = sim.state.users.find((u) => u.accountType === 'SSO')!;
    const unknown = randomUUID();
    const cases: Array<[string, () => Promise<unknown>, RunningSimulator]> = [
      ['INVALID_MODEL', () => client.createUser({ email: 'not-an-email', firstName: 'A', lastName: 'B', role: 'USER' }), sim],
      ['EMAIL_IN_USE_ORG_CONNECTED', () => client.createUser({ email: api.email, firstName: 'A', lastName: 'B', role: 'USER' }), sim],
      ['EMAIL_IN_USE', () => client.createUser({ email: `someone${FOREIGN_EMAIL_DOMAIN}`, firstName: 'A', lastName: 'B', role: 'USER' }), sim],
      ['USER_NOT_FOUND', () => client.disableUser(unknown), sim],
      ['INVALID_USER_TYPE', () => client.setPassword(sso.email, PASSWORD), sim],
      ['INVALID_PASSWORD', () => client.setPassword(api.email, 'short'), sim],
      ['GROUP_NOT_FOUND', () => client.addToGroup(unknown, api.id), sim],
      ['COURSE_NOT_FOUND', () => client.getAutostartLoginUrl(api.email, unknown), sim],
      ['RESULT_NOT_FOUND', () => client.getResult(unknown), sim],
      ['USER_LIMIT_REACHED', () => otherClient.createUser({ email: `new${ORG_EMAIL_DOMAIN}`, firstName: 'A', lastName: 'B', role: 'USER' }), other],
      ['NO_UNLIMITED_PLAN', () => otherClient.getSeats(), other],
      ['NO_GROUPS_AVAILABLE', () => otherClient.addToGroup(unknown, unknown), other],
    ];
    for (const [code, call, server] of cases) {
      server.resetRequests();
      const error = await failure(call());
      expect([code, error.code, error.status, error.retryable]).toEqual([code, code, 400, false]);
      expect(server.requests).toHaveLength(1);
    }
    const weak = await failure(client.setPassword(api.email, 'short'));
    expect(Array.isArray(weak.details)).toBe(true);

    // A body the vendor would refuse is not even sent.
    sim.resetRequests();
    const bad = await failure(client.createUser({ email: `r${ORG_EMAIL_DOMAIN}`, firstName: 'A', lastName: 'B', role: 'BOSS' as 'USER' }));
    expect(bad).toMatchObject({ code: 'INVALID_MODEL', retryable: false, status: undefined });
    expect(sim.requests).toHaveLength(0);
  });

  it('normalises COUSRE_NOT_FOUND and reports USER_LOCKOUT', async () => {
    const user = sim.state.users.find((u) => u.accountType === 'API' && u.hasAccess)!;
    const course = await failure(client.getAutostartLoginUrl(user.email, randomUUID()));
    expect(course).toMatchObject({ code: 'COURSE_NOT_FOUND', rawCode: 'COUSRE_NOT_FOUND' });
    setUserLocked(sim.state, user.email, true);
    const locked = await failure(client.getAutostartLoginUrl(user.email, sim.state.courses[0]!.id));
    setUserLocked(sim.state, user.email, false);
    expect(locked).toMatchObject({ code: 'USER_LOCKOUT', retryable: false });
  });

  it('a bad key is UNAUTHORIZED, names TRAINSYNC_API_KEY, is not retried and is not logged', async () => {
    const wrongKey = `wrong-${randomUUID()}`;
    const bad = makeClient(sim.url, wrongKey);
    const error = await failure(bad.getSeats());
    expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401, retryable: false });
    expect(error.message).toContain('TRAINSYNC_API_KEY');
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]!.authorization).toBe(`Bearer ${wrongKey}`);
    expect(logLines.join('')).not.toContain(wrongKey);
  });
});

describe("a run's count of requests", () => {
  it('a counting view adds each HTTP attempt of its own requests to its tally, and only those', async () => {
    const walk = { requests: 0 };
    const reads = { requests: 0 };
    const walking = client.counting(walk);
    const reading = client.counting(reads);
    const windowOf = (startDate: string, endDate: string) => ({ query: resultsQuery({ startDate, endDate }) });
    // Every other request fails once with a 5xx and is retried: each attempt counts.
    sim.setFaults({ serverErrorEvery: 2 });
    const [pages] = await Promise.all([
      collect(walking.listResults({ startDate: '2024-03-01', endDate: '2024-05-01' })),
      reading.getSeats(),
      reading.listPage(RESULTS, windowOf('2024-06-01', '2024-07-01'), 1),
      // The client itself, at the same time: counted by no tally.
      client.listPage(RESULTS, windowOf('2024-08-01', '2024-09-01'), 1),
    ]);
    const sent = (path: string, startDate?: string): number =>
      sim.requests.filter((r) => r.path === path && (startDate === undefined || new URLSearchParams(r.query).get('startDate')?.startsWith(startDate))).length;
    expect(sim.requests.some((r) => r.status >= 500)).toBe(true);
    expect(pages.length).toBeGreaterThan(3);
    expect(walk.requests).toBe(sent('/api/v2/results', '2024-03-01'));
    expect(reads.requests).toBe(sent('/api/v2/users/seats') + sent('/api/v2/results', '2024-06-01'));
    expect(sent('/api/v2/results', '2024-08-01')).toBeGreaterThanOrEqual(1);
    expect(walk.requests + reads.requests).toBe(sim.requests.length - sent('/api/v2/results', '2024-08-01'));
  });
});

describe('retries', () => {
  it('retries 5xx up to the limit, then fails retryable', async () => {
    const few = makeClient(sim.url, sim.apiKey, { retries: 2 });
    sim.setFaults({ serverErrorEvery: 1 });
    const error = await failure(few.getSeats());
    expect(error.retryable).toBe(true);
    expect(error.code).toMatch(/^HTTP_50[023]$/);
    expect(sim.requests.map((r) => r.status)).toEqual([500, 502, 503]);
  });

  it('a walk survives every other request failing with 5xx', async () => {
    const clean = await collect(client.listResults({ startDate: '2024-03-01', endDate: '2024-05-01' }));
    sim.setFaults({ serverErrorEvery: 2 });
    sim.resetRequests();
    const faulty = await collect(client.listResults({ startDate: '2024-03-01', endDate: '2024-05-01' }));
    expect(ids(faulty)).toEqual(ids(clean));
    // Request 1 succeeds, then every page after the first fails once and succeeds on retry.
    expect(sim.requests.filter((r) => r.status >= 500)).toHaveLength(clean.length - 1);
    expect(sim.requests).toHaveLength(2 * clean.length - 1);
  });

  it('waits at least Retry-After (seconds) before the next attempt', async () => {
    sim.setFaults({ rateLimitEvery: 2, retryAfter: '1' });
    await client.getSeats();
    await client.getSeats();
    expect(sim.requests.map((r) => r.status)).toEqual([200, 429, 200]);
    expect(sim.requests[2]!.at - sim.requests[1]!.at).toBeGreaterThanOrEqual(1000);
    expect(events.some((e) => e.status === 429 && e.code === 'HTTP_429')).toBe(true);
  });

  it('waits until a Retry-After HTTP date', async () => {
    const until = new Date(Math.ceil((Date.now() + 1500) / 1000) * 1000);
    sim.setFaults({ rateLimitEvery: 1, retryAfter: until.toUTCString() });
    const pending = client.getSeats();
    // Only the first request is limited; lift the fault once it has been answered.
    while (sim.requests.length === 0 || sim.requests[0]!.status === 0) await new Promise((r) => setTimeout(r, 5));
    sim.setFaults({ rateLimitEvery: 0 });
    await pending;
    expect(sim.requests.map((r) => r.status)).toEqual([429, 200]);
    // The simulator stamps arrivals on the same clock; allow for its sub-ms drift from Date.
    expect(sim.requests[1]!.at).toBeGreaterThanOrEqual(until.getTime() - 20);
  });

  it('times out a slow response and retries it', async () => {
    const impatient = makeClient(sim.url, sim.apiKey, { timeoutMs: 100, retries: 1 });
    sim.setFaults({ latencyMs: 400 });
    const error = await failure(impatient.getSeats());
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true, status: undefined });
    expect(sim.requests).toHaveLength(2);
  });
});

describe('pages as the platform serves them', () => {
  const window = { startDate: '2024-02-01', endDate: '2024-08-01' };

  it('sets malformed records aside per record, naming the field', async () => {
    const clean = await collect(client.listResults(window));
    sim.setFaults({ malformedResultEvery: 7 });
    const pages = await collect(client.listResults(window));
    const problems = pages.flatMap((p) => p.problems);
    expect(problems.length).toBeGreaterThan(5);
    expect(problems.every((p) => /^(id|score): /.test(p.message))).toBe(true);
    expect(problems.every((p) => p.resource === 'results' && typeof p.raw === 'object')).toBe(true);
    expect(problems.some((p) => p.message.startsWith('id: ')) && problems.some((p) => p.message.startsWith('score: '))).toBe(true);
    for (const p of pages) expect(p.records.length + p.problems.length).toBe(clean.find((c) => c.page === p.page)!.records.length);
    const first = problems[0]!;
    expect(pages.find((p) => p.page === first.page)!.records.length).toBeLessThan(50);
  });

  it('keeps the caller filters when a Next Page link drops them', async () => {
    const answer = sim.state.filters[0]!.answers[0]!.id;
    const query = { startDate: '2024-01-01', endDate: '2025-01-01', reportingFilters: [answer] };
    const clean = await collect(client.listResults(query));
    expect(clean.length).toBeGreaterThan(1);
    sim.setFaults({ dropFiltersInNextLink: true });
    sim.resetRequests();
    const dropped = await collect(client.listResults(query));
    expect(ids(dropped)).toEqual(ids(clean));
    expect(sim.requests.length).toBeGreaterThan(1);
    for (const r of sim.requests) {
      const q = new URLSearchParams(r.query);
      expect([q.get('startDate'), q.get('endDate'), q.getAll('reportingFilters[]')]).toEqual([query.startDate, query.endDate, [answer]]);
    }
  });

  it('never follows a Next Page link to another host', async () => {
    const clean = await collect(client.listResults(window));
    sim.setFaults({ foreignNextLink: true });
    sim.resetRequests();
    const before = logLines.length;
    const pages = await collect(client.listResults(window));
    expect(ids(pages)).toEqual(ids(clean));
    expect(sim.requests).toHaveLength(clean.length);
    expect(sim.requests.every((r) => r.authorized && r.path === '/api/v2/results')).toBe(true);
    const warnings = logLines.slice(before).map((l) => JSON.parse(l) as { level: number; foreignHost?: string });
    expect(warnings.filter((w) => w.level === 40 && w.foreignHost === `evil.invalid:${sim.port}`)).toHaveLength(clean.length - 1);
  });

  it('stops a walk when its signal aborts', async () => {
    const controller = new AbortController();
    const seenPages: number[] = [];
    const error = await failure(
      (async () => {
        for await (const page of client.listResults(window, { signal: controller.signal })) {
          seenPages.push(page.page);
          controller.abort();
        }
      })(),
    );
    expect(error.code).toBe('ABORTED');
    expect(seenPages).toEqual([1]);
    expect(sim.requests).toHaveLength(1);
  });

  it('completes a walk while new results appear mid-walk', async () => {
    // New results are completions now: a range open at its end lists them.
    const open = { startDate: window.startDate };
    const before = (await collect(client.listResults(open)))[0]!.totalEntities!;
    sim.setFaults({ driftEvery: 2 });
    const pages = await collect(client.listResults(open));
    const got = ids(pages);
    expect(got.length).toBeGreaterThanOrEqual(before);
    expect(Math.max(...pages.map((p) => p.totalEntities!))).toBeGreaterThan(before);
  });
});

describe('odd page sizes, a foreign host and connection resets (own servers)', () => {
  let platform: http.Server;
  let foreign: http.Server;
  let foreignHits = 0;
  const seen: Array<{ method: string; url: string; authorization: string | undefined; contentLength: string | undefined }> = [];
  let resets = 1;
  const results = Array.from({ length: 17 }, () => ({
    id: randomUUID(),
    userId: randomUUID(),
    courseId: randomUUID(),
    isComplete: true,
    dateCompleted: '2024-05-05T05:05:05.123Z',
    score: 1,
    maximumScore: 2,
    passRate: null,
    courseType: 'SINGLE_COURSE',
    resultFilters: [],
  }));
  const users = Array.from({ length: 17 }, (_, i) => ({ id: randomUUID(), email: `u${i}@x.example`, hasAccess: true }));
  const KEY = `own-${randomUUID()}`;
  let foreignOrigin = '';

  const listen = (server: http.Server): Promise<number> =>
    new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

  beforeAll(async () => {
    foreign = http.createServer((req, res) => {
      foreignHits++;
      res.writeHead(500).end();
    });
    foreignOrigin = `http://127.0.0.1:${await listen(foreign)}`;
    platform = http.createServer((req, res) => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, contentLength: req.headers['content-length'] });
      req.resume();
      const url = new URL(req.url!, 'http://x');
      const page = Number(url.searchParams.get('page') ?? '1');
      const send = (body: unknown): void => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (url.pathname === '/api/v2/results') {
        // Pages of 7, 7 and 3; links name another host.
        const entities = results.slice((page - 1) * 7, page * 7);
        const links = page * 7 < results.length ? [{ type: 'Next Page', href: `${foreignOrigin}/api/v2/results?page=${page + 1}`, method: 'GET' }] : [];
        send({ entities, page, entitiesReturned: entities.length, totalEntities: results.length, links });
      } else if (url.pathname === '/api/v2/users') {
        const entities = users.slice((page - 1) * 7, page * 7);
        send({ entities, page, entitiesReturned: entities.length, totalEntities: users.length, links: [] });
      } else if (url.pathname === '/api/v2/courses') {
        if (resets-- > 0) {
          req.socket.destroy();
          return;
        }
        send({ entities: [], page: 1, entitiesReturned: 0, totalEntities: 0, links: [] });
      } else if (url.pathname === '/api/v2/login/autostart') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('https://t.example/account/login?token=t&userId=u&orgId=o&moduleId=m');
      } else {
        res.writeHead(404).end();
      }
    });
    await listen(platform);
  });

  afterAll(async () => {
    platform.closeAllConnections();
    foreign.closeAllConnections();
    await new Promise((r) => platform.close(r));
    await new Promise((r) => foreign.close(r));
  });

  it('assumes no page size and sends nothing to the foreign host', async () => {
    const own = makeClient(`http://127.0.0.1:${(platform.address() as AddressInfo).port}`, KEY);
    const resultPages = await collect(own.listResults({ startDate: '2024-01-01' }));
    expect(resultPages.map((p) => p.records.length)).toEqual([7, 7, 3]);
    expect(ids(resultPages)).toEqual(results.map((r) => r.id));
    const userPages = await collect(own.listUsers());
    expect(userPages.map((p) => p.records.length)).toEqual([7, 7, 3]);
    expect(foreignHits).toBe(0);
    expect(seen.every((s) => s.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(seen.filter((s) => s.url.startsWith('/api/v2/results')).map((s) => new URL(s.url, 'http://x').searchParams.get('startDate'))).toEqual([
      '2024-01-01',
      '2024-01-01',
      '2024-01-01',
    ]);
  });

  it('retries a connection reset, and sends Content-Length: 0 on the bodiless log-in POST', async () => {
    const own = makeClient(`http://127.0.0.1:${(platform.address() as AddressInfo).port}`, KEY);
    seen.length = 0;
    const pages = await collect(own.listCourses());
    expect(pages).toHaveLength(1);
    expect(seen.map((s) => s.url.split('?')[0])).toEqual(['/api/v2/courses', '/api/v2/courses']);
    await own.getAutostartLoginUrl('a@b.example', randomUUID());
    expect(seen.at(-1)).toMatchObject({ method: 'POST', contentLength: '0' });
    expect(logLines.some((l) => l.includes('"code":"NETWORK"'))).toBe(true);
  });
});

describe('logging', () => {
  it('logs method, path, status, ms and attempt; never the key, a query or a password', () => {
    const requests = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'platform request');
    expect(requests.length).toBeGreaterThan(50);
    for (const line of requests) {
      expect(Object.keys(line)).toEqual(expect.arrayContaining(['method', 'path', 'status', 'ms', 'attempt']));
      expect(String(line.path)).not.toContain('?');
    }
    const all = logLines.join('');
    expect(all).not.toContain(sim.apiKey);
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain('userIdentifier');
  });
});
