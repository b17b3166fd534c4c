import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addResult,
  DEMO_API_KEY,
  FOREIGN_EMAIL_DOMAIN,
  generateState,
  DEFAULT_SIZES,
  queryResults,
  setUserLocked,
  startSimulator,
  writeCallCount,
  type ApiResult,
  type RunningSimulator,
} from '../src/simulator/index.ts';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

async function call(sim: RunningSimulator, method: string, pathAndQuery: string, options: { body?: unknown; key?: string | null } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? sim.apiKey : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let payload: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(options.body);
  }
  const res = await fetch(pathAndQuery.startsWith('http') ? pathAndQuery : `${sim.url}${pathAndQuery}`, { method, headers, body: payload });
  const text = await res.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

interface Envelope<T = Record<string, unknown>> {
  entities: T[];
  page: number;
  entitiesReturned: number;
  totalEntities: number;
  links: Array<{ type: string; href: string; method: string }>;
}

async function list<T = Record<string, unknown>>(sim: RunningSimulator, pathAndQuery: string): Promise<Envelope<T>> {
  const a = await call(sim, 'GET', pathAndQuery);
  expect(a.status, a.text).toBe(200);
  return a.body as Envelope<T>;
}

/** Follows Next Page links from the first page; returns every page. */
async function walk(sim: RunningSimulator, first: string): Promise<Envelope<ApiResult>[]> {
  const pages: Envelope<ApiResult>[] = [];
  let next: string | undefined = first;
  while (next !== undefined) {
    const page: Envelope<ApiResult> = await list<ApiResult>(sim, next);
    pages.push(page);
    next = page.links.find((l) => l.type === 'Next Page')?.href;
    expect(pages.length).toBeLessThan(500);
  }
  return pages;
}

function expectError(a: Answer, code: string): void {
  expect(a.status, a.text).toBe(400);
  const body = a.body as { code: string; message: string; details: unknown };
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe('string');
  expect('details' in body).toBe(true);
}

describe('simulator: reporting endpoints', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 11, sizes: { results: 1200, users: 120 } });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('pages results 50 at a time with Next Page links only while more remain', async () => {
    const pages = await walk(sim, '/api/v2/results?startDate=2024-02-01&endDate=2024-08-01');
    const expected = queryResults(sim.state, { startDate: '2024-02-01', endDate: '2024-08-01' });
    expect(expected.length).toBeGreaterThan(100);
    expect(pages.length).toBe(Math.ceil(expected.length / 50));
    pages.forEach((p, i) => {
      expect(p.page).toBe(i + 1);
      expect(p.totalEntities).toBe(expected.length);
      expect(p.entitiesReturned).toBe(p.entities.length);
      const last = i === pages.length - 1;
      expect(p.entities.length).toBe(last ? expected.length - 50 * i : 50);
      expect(p.links.length).toBe(last ? 0 : 1);
      if (!last) {
        const href = new URL(p.links[0]!.href);
        expect(p.links[0]!.method).toBe('GET');
        expect(href.origin).toBe(sim.url);
        expect(href.searchParams.get('startDate')).toBe('2024-02-01');
        expect(href.searchParams.get('endDate')).toBe('2024-08-01');
        expect(href.searchParams.get('page')).toBe(String(i + 2));
      }
    });
    const ids = pages.flatMap((p) => p.entities.map((r) => r.id));
    expect(ids).toEqual(expected.map((r) => r.id));
    // Stable order: by dateCompleted, then id.
    const all = pages.flatMap((p) => p.entities);
    for (let i = 1; i < all.length; i++) {
      const a = all[i - 1]!;
      const b = all[i]!;
      expect(a.dateCompleted! < b.dateCompleted! || (a.dateCompleted === b.dateCompleted && a.id < b.id)).toBe(true);
    }
    const beyond = await list(sim, `/api/v2/results?startDate=2024-02-01&endDate=2024-08-01&page=${pages.length + 1}`);
    expect(beyond.entities).toEqual([]);
    expect(beyond.links).toEqual([]);
    expect(beyond.totalEntities).toBe(expected.length);
  });

  it('serves results in the documented shape, some with an undocumented extra field', async () => {
    const pages = await walk(sim, '/api/v2/results');
    const all = pages.flatMap((p) => p.entities);
    expect(all.length).toBe(1200);
    const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const r of all) {
      expect(r.id).toMatch(guid);
      expect(r.courseType).toBe('SINGLE_COURSE');
      if (r.isComplete) expect(r.dateCompleted).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      else expect(r.dateCompleted).toBeNull();
      expect(r.resultFilters.length).toBeLessThanOrEqual(2);
    }
    const incomplete = all.filter((r) => !r.isComplete).length;
    expect(incomplete / all.length).toBeGreaterThan(0.04);
    expect(incomplete / all.length).toBeLessThan(0.2);
    // Undated results come last in an undated query.
    const firstUndated = all.findIndex((r) => r.dateCompleted === null);
    expect(all.slice(firstUndated).every((r) => r.dateCompleted === null)).toBe(true);
    expect(all.some((r) => r.multiCourseResultId !== null)).toBe(true);
    const extra = all.filter((r) => 'certificateUrl' in r).length;
    expect(extra).toBeGreaterThan(10);
    expect(extra).toBeLessThan(150);
  });

  it('GET results/{id} returns the bare object, RESULT_NOT_FOUND otherwise', async () => {
    const r = sim.state.results[5]!;
    const a = await call(sim, 'GET', `/api/v2/results/${r.id}`);
    expect(a.status).toBe(200);
    expect(a.body).toEqual(r);
    expectError(await call(sim, 'GET', '/api/v2/results/00000000-0000-4000-8000-000000000000'), 'RESULT_NOT_FOUND');
    expectError(await call(sim, 'GET', '/api/v2/results/nope'), 'RESULT_NOT_FOUND');
  });

  it('filters results by reporting filter answers (repeated, any match) and by group', async () => {
    const [a1, a2] = [sim.state.filters[0]!.answers[0]!.id, sim.state.filters[1]!.answers[2]!.id];
    const q = `startDate=2024-01-01&endDate=2025-01-01&reportingFilters[]=${a1}&reportingFilters[]=${a2}`;
    const ids = (await walk(sim, `/api/v2/results?${q}`)).flatMap((p) => p.entities.map((r) => r.id));
    const expected = sim.state.results.filter((r) => r.resultFilters.includes(a1) || r.resultFilters.includes(a2)).map((r) => r.id);
    expect(expected.length).toBeGreaterThan(50);
    expect(ids).toEqual(expected);
    // The name without brackets is accepted too.
    const plain = await list(sim, `/api/v2/results?startDate=2024-01-01&endDate=2025-01-01&reportingFilters=${a1}`);
    expect(plain.totalEntities).toBe(sim.state.results.filter((r) => r.resultFilters.includes(a1)).length);
    // A group id means that group's members' results.
    const group = sim.state.groups[0]!;
    const groupIds = (await walk(sim, `/api/v2/results?startDate=2024-01-01&reportingFilters[]=${group.id}`)).flatMap((p) => p.entities.map((r) => r.id));
    const expectedGroup = sim.state.results.filter((r) => group.memberIds.has(r.userId)).map((r) => r.id);
    expect(expectedGroup.length).toBeGreaterThan(0);
    expect(groupIds).toEqual(expectedGroup);
    expectError(await call(sim, 'GET', '/api/v2/results?reportingFilters[]=not-a-guid'), 'INVALID_MODEL');
    expectError(await call(sim, 'GET', '/api/v2/results?startDate=yesterday'), 'INVALID_MODEL');
    expectError(await call(sim, 'GET', '/api/v2/results?page=0'), 'INVALID_MODEL');
  });

  it('lists courses (filters by categoryType and name), filters and groups on one page with links []', async () => {
    const courses = await list<{ id: string; name: string; passRate: number | null; categories: Array<{ type: string; name: string }> }>(sim, '/api/v2/courses');
    expect(courses.entities.length).toBe(40);
    expect(courses.totalEntities).toBe(40);
    expect(courses.entitiesReturned).toBe(40);
    expect(courses.links).toEqual([]);
    for (const c of courses.entities) {
      expect(c.categories.length).toBeGreaterThanOrEqual(1);
      expect(c.categories.length).toBeLessThanOrEqual(3);
    }
    expect(courses.entities.some((c) => c.passRate === null)).toBe(true);
    const subject = await list<{ categories: Array<{ type: string }> }>(sim, '/api/v2/courses?categoryType=SUBJECT');
    expect(subject.entities.length).toBe(courses.entities.filter((c) => c.categories.some((k) => k.type === 'SUBJECT')).length);
    const named = await list<{ name: string }>(sim, '/api/v2/courses?name=fire%20safety&categoryType=SUBJECT');
    expect(named.entities.length).toBeGreaterThan(0);
    expect(named.entities.every((c) => c.name.toLowerCase().includes('fire safety'))).toBe(true);
    const none = await list(sim, '/api/v2/courses?name=no-such-course');
    expect(none).toMatchObject({ entities: [], totalEntities: 0, entitiesReturned: 0, links: [] });

    const filters = await list<{ id: string; name: string; answers: Array<{ id: string; answer: string }> }>(sim, '/api/v2/filters');
    expect(filters.entities.length).toBe(4);
    expect(filters.entities.every((f) => f.answers.length === 5)).toBe(true);
    expect(filters.links).toEqual([]);
    const groups = await list<Record<string, unknown>>(sim, '/api/v2/groups');
    expect(groups.entities.length).toBe(5);
    expect(Object.keys(groups.entities[0]!).sort()).toEqual(['courses', 'id', 'name']);
  });

  it('pages users 50 at a time with no links, and filters by email, orgId and userId', async () => {
    const first = await list<{ id: string; email: string; organisationIdentifier: string }>(sim, '/api/v2/users');
    expect(first.totalEntities).toBe(120);
    expect(first.entities.length).toBe(50);
    expect(first.links).toEqual([]);
    const third = await list(sim, '/api/v2/users?page=3');
    expect(third.entities.length).toBe(20);
    expect((await list(sim, '/api/v2/users?page=4')).entities).toEqual([]);
    const u = first.entities[7]!;
    const byEmail = await list<{ id: string }>(sim, `/api/v2/users?email=${encodeURIComponent(u.email.toUpperCase().slice(0, u.email.indexOf('@')))}`);
    expect(byEmail.entities.map((x) => x.id)).toContain(u.id);
    const byOrg = await list<{ organisationIdentifier: string }>(sim, '/api/v2/users?orgId=E00001');
    expect(byOrg.entities.length).toBe(10);
    expect(byOrg.entities.every((x) => x.organisationIdentifier.startsWith('E00001'))).toBe(true);
    expect((await list<{ id: string }>(sim, `/api/v2/users?userId=${u.id}`)).entities.map((x) => x.id)).toEqual([u.id]);
    expect((await list(sim, '/api/v2/users?userId=00000000-0000-4000-8000-000000000000')).entities).toEqual([]);
  });

  it('answers 401 UNAUTHORIZED without a valid key, 404 for unknown paths, and records requests', async () => {
    sim.resetRequests();
    const none = await call(sim, 'GET', '/api/v2/courses', { key: null });
    expect(none.status).toBe(401);
    expect((none.body as { code: string }).code).toBe('UNAUTHORIZED');
    expect((await call(sim, 'GET', '/api/v2/courses', { key: 'wrong' })).status).toBe(401);
    expect((await call(sim, 'GET', '/api/v2/nothing-here')).status).toBe(404);
    expect((await call(sim, 'GET', '/elsewhere')).status).toBe(404);
    expect(sim.requests.map((r) => [r.status, r.authorized])).toEqual([
      [401, false],
      [401, false],
      [404, true],
      [404, true],
    ]);
    expect(sim.requests[3]!.authorization).toBe(`Bearer ${sim.apiKey}`);
    expect(sim.requests[0]!.at).toBeLessThanOrEqual(sim.requests[3]!.at);
  });
});

describe('simulator: date bounds', () => {
  it('exclusive-instant: only results strictly after startDate and strictly before endDate; date means midnight UTC', async () => {
    const sim = await startSimulator({ seed: 3, sizes: { results: 300 } });
    try {
      const atStart = addResult(sim.state, { dateCompleted: '2024-05-01T00:00:00.000Z' });
      const justAfter = addResult(sim.state, { dateCompleted: '2024-05-01T00:00:00.001Z' });
      const atEnd = addResult(sim.state, { dateCompleted: '2024-05-02T00:00:00.000Z' });
      const lateOnEnd = addResult(sim.state, { dateCompleted: '2024-05-02T23:00:00.000Z' });
      const ids = (await walk(sim, '/api/v2/results?startDate=2024-05-01&endDate=2024-05-02')).flatMap((p) => p.entities.map((r) => r.id));
      expect(ids).toContain(justAfter.id);
      expect(ids).not.toContain(atStart.id);
      expect(ids).not.toContain(atEnd.id);
      expect(ids).not.toContain(lateOnEnd.id);
      // An instant with an offset: 02:00+02:00 is midnight UTC.
      const withOffset = await list<ApiResult>(sim, `/api/v2/results?startDate=${encodeURIComponent('2024-05-01T02:00:00+02:00')}&endDate=2024-05-02`);
      expect(withOffset.entities.map((r) => r.id)).toEqual(ids.slice(0, 50));
      // Undated (incomplete) results never match a bounded query.
      const undated = sim.state.undatedResults[0]!;
      const bounded = (await walk(sim, '/api/v2/results?startDate=2000-01-01')).flatMap((p) => p.entities.map((r) => r.id));
      expect(bounded).not.toContain(undated.id);
      const unbounded = (await walk(sim, '/api/v2/results')).flatMap((p) => p.entities.map((r) => r.id));
      expect(unbounded).toContain(undated.id);
    } finally {
      await sim.close();
    }
  });

  it('inclusive-date: startDate counts from its midnight and endDate covers its whole day', async () => {
    const sim = await startSimulator({ seed: 3, sizes: { results: 300 }, dateBounds: 'inclusive-date' });
    try {
      const atStart = addResult(sim.state, { dateCompleted: '2024-05-01T00:00:00.000Z' });
      const lateOnEnd = addResult(sim.state, { dateCompleted: '2024-05-02T23:59:59.999Z' });
      const dayAfter = addResult(sim.state, { dateCompleted: '2024-05-03T00:00:00.000Z' });
      const before = addResult(sim.state, { dateCompleted: '2024-04-30T23:59:59.999Z' });
      const ids = (await walk(sim, '/api/v2/results?startDate=2024-05-01&endDate=2024-05-02')).flatMap((p) => p.entities.map((r) => r.id));
      expect(ids).toContain(atStart.id);
      expect(ids).toContain(lateOnEnd.id);
      expect(ids).not.toContain(dayAfter.id);
      expect(ids).not.toContain(before.id);
    } finally {
      await sim.close();
    }
  });
});

describe('simulator: faults', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, sizes: { results: 600 } });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('drift inserts a new result inside the query range, so totalEntities grows mid-walk', async () => {
    sim.setFaults({ driftEvery: 1 });
    try {
      const before = queryResults(sim.state, { startDate: '2024-03-01' }).length;
      const pages = await walk(sim, '/api/v2/results?startDate=2024-03-01');
      // An arrival comes before each page is served.
      expect(pages[0]!.totalEntities).toBe(before + 1);
      expect(pages[1]!.totalEntities).toBe(before + 2);
      expect(pages[pages.length - 1]!.totalEntities).toBe(before + pages.length);
      const after = queryResults(sim.state, { startDate: '2024-03-01' }).length;
      expect(after).toBe(before + pages.length);
      // A completion now: outside a range that ends before it.
      expect(queryResults(sim.state, { startDate: '2024-03-01', endDate: '2024-04-01' }).length).toBeLessThan(before);
    } finally {
      sim.setFaults({ driftEvery: 0 });
    }
  });

  it('arrivals land at the newest end of the listing: a walk to the end sees every result once', async () => {
    for (const query of ['startDate=2024-03-01', '']) {
      const before = queryResults(sim.state, query === '' ? {} : { startDate: '2024-03-01' }).map((r) => r.id);
      sim.setFaults({ driftEvery: 2, driftCount: 3 });
      try {
        const pages = await walk(sim, `/api/v2/results${query === '' ? '' : `?${query}`}`);
        const seen = pages.flatMap((p) => p.entities.map((r) => r.id));
        // No result seen twice, none skipped, and the new ones read too.
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen.slice(0, before.length)).toEqual(before);
        expect(seen.length).toBe(pages[pages.length - 1]!.totalEntities);
        expect(seen.length - before.length).toBe(3 * Math.floor(pages.length / 2));
      } finally {
        sim.setFaults({ driftEvery: 0, driftCount: 1 });
      }
    }
  });

  it('removal while paging deletes a result already served, so the next page starts one result later', async () => {
    const before = queryResults(sim.state, { startDate: '2024-03-01', endDate: '2024-09-01' }).map((r) => r.id);
    sim.setFaults({ removeEvery: 2, removeLimit: 1 });
    try {
      const pages = await walk(sim, '/api/v2/results?startDate=2024-03-01&endDate=2024-09-01');
      expect(pages.map((p) => p.totalEntities)).toEqual(pages.map((_, i) => (i < 2 ? before.length : before.length - 1)));
      const after = new Set(queryResults(sim.state, { startDate: '2024-03-01', endDate: '2024-09-01' }).map((r) => r.id));
      const removed = before.filter((id) => !after.has(id));
      expect(removed).toHaveLength(1);
      // The removed one was on pages 1–2; the first result of page 3 moved onto page 2 and was skipped.
      expect(before.indexOf(removed[0]!)).toBeLessThan(100);
      const seen = new Set(pages.flatMap((p) => p.entities.map((r) => r.id)));
      expect(before.filter((id) => !seen.has(id))).toEqual([before[100]]);
    } finally {
      sim.setFaults({ removeEvery: 0, removeLimit: 0 });
    }
  });

  it('serves the same records malformed every time', async () => {
    sim.setFaults({ malformedResultEvery: 7 });
    try {
      const bad = (p: Envelope<ApiResult>): string[] =>
        p.entities.filter((r) => r.id === 'not-a-guid' || typeof r.score === 'string').map((r) => `${r.userId}|${r.courseId}|${r.dateCompleted}`);
      const a = await list<ApiResult>(sim, '/api/v2/results?startDate=2024-01-01&page=2');
      const b = await list<ApiResult>(sim, '/api/v2/results?startDate=2024-01-01&page=2');
      expect(bad(a).length).toBeGreaterThan(2);
      expect(bad(a).length).toBeLessThan(20);
      expect(bad(b)).toEqual(bad(a));
      expect(a.entities.some((r) => r.id === 'not-a-guid')).toBe(true);
      expect(a.entities.some((r) => typeof r.score === 'string')).toBe(true);
    } finally {
      sim.setFaults({ malformedResultEvery: 0 });
    }
  });

  it('can name a foreign host, or drop the filters, in Next Page links', async () => {
    // Every answer of one filter: enough results for a second page.
    const answer = sim.state.filters[0]!.answers.map((a) => a.id).join('&reportingFilters[]=');
    sim.setFaults({ foreignNextLink: true });
    const foreign = await list(sim, `/api/v2/results?reportingFilters[]=${answer}`);
    expect(new URL(foreign.links[0]!.href).origin).toBe(`http://evil.invalid:${sim.port}`);
    sim.setFaults({ foreignNextLink: false, dropFiltersInNextLink: true });
    const dropped = await list(sim, `/api/v2/results?startDate=2024-01-01&reportingFilters[]=${answer}`);
    expect(dropped.links[0]!.href).toBe(`${sim.url}/api/v2/results?page=2`);
    sim.setFaults({ dropFiltersInNextLink: false });
    const normal = await list(sim, `/api/v2/results?startDate=2024-01-01&reportingFilters[]=${answer}`);
    expect(normal.links[0]!.href).toBe(`${sim.url}/api/v2/results?startDate=2024-01-01&reportingFilters[]=${answer}&page=2`);
  });

  it('answers every Nth request 429 with Retry-After, and 5xx bodies without the error shape', async () => {
    sim.setFaults({ rateLimitEvery: 3, retryAfter: '2' });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const a = await call(sim, 'GET', '/api/v2/filters');
      statuses.push(a.status);
      if (a.status === 429) expect(a.headers.get('retry-after')).toBe('2');
    }
    expect(statuses).toEqual([200, 200, 429, 200, 200, 429]);
    sim.setFaults({ rateLimitEvery: 0, serverErrorEvery: 2 });
    const errors: Answer[] = [];
    for (let i = 0; i < 6; i++) {
      const a = await call(sim, 'GET', '/api/v2/filters');
      if (a.status !== 200) errors.push(a);
    }
    sim.setFaults({ serverErrorEvery: 0 });
    expect(errors.map((e) => e.status)).toEqual([500, 502, 503]);
    for (const e of errors) expect((e.body as { code?: unknown } | undefined)?.code).toBeUndefined();
  });

  it('is steerable over HTTP: POST /__simulator/faults and the requests summary', async () => {
    sim.resetRequests();
    const set = await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ rateLimitEvery: 2 }) });
    expect(set.status).toBe(200);
    expect(sim.faults.rateLimitEvery).toBe(2);
    const bad = await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ rateLimitEvery: -1 }) });
    expect(bad.status).toBe(400);
    expect((await call(sim, 'GET', '/api/v2/courses')).status).toBe(200);
    expect((await call(sim, 'GET', '/api/v2/courses')).status).toBe(429);
    await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ rateLimitEvery: 0 }) });
    const uid = sim.state.users[1]!.id;
    expect((await call(sim, 'PATCH', `/api/v2/users/${uid}/enable`)).status).toBe(204);
    const summary = (await (await fetch(`${sim.url}/__simulator/requests/summary`)).json()) as {
      total: number;
      byRoute: Record<string, number>;
      maxInAnyWindow: number;
      writeCalls: number;
    };
    expect(summary.total).toBe(3);
    expect(summary.byRoute).toEqual({ 'GET /api/v2/courses': 2, 'PATCH /api/v2/users/{userId}/enable': 1 });
    expect(summary.maxInAnyWindow).toBeGreaterThanOrEqual(1);
    expect(summary.maxInAnyWindow).toBeLessThanOrEqual(3);
    expect(summary.writeCalls).toBe(1);
    expect(writeCallCount(sim.requests)).toBe(1);
  });
});

describe('simulator: provisioning', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 9, sizes: { results: 100, users: 60 }, totalSeats: 200 });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('creates a user (204, no body) who then shows in GET users with access', async () => {
    const before = await list(sim, '/api/v2/users');
    const create = await call(sim, 'POST', '/api/v2/users', {
      body: { email: 'New.Starter@acme-training.example', firstName: 'New', lastName: 'Starter', role: 'USER', organisationIdentifier: 'E900001' },
    });
    expect(create.status).toBe(204);
    expect(create.text).toBe('');
    const found = await list<{ email: string; hasAccess: boolean; organisationIdentifier: string; id: string }>(sim, '/api/v2/users?email=new.starter');
    expect(found.entities).toHaveLength(1);
    expect(found.entities[0]).toMatchObject({ email: 'New.Starter@acme-training.example', hasAccess: true, organisationIdentifier: 'E900001' });
    expect((await list(sim, '/api/v2/users')).totalEntities).toBe(before.totalEntities + 1);
    expectError(await call(sim, 'POST', '/api/v2/users', { body: { email: 'NEW.STARTER@acme-training.example', firstName: 'A', lastName: 'B', role: 'USER' } }), 'EMAIL_IN_USE_ORG_CONNECTED');
    expectError(await call(sim, 'POST', '/api/v2/users', { body: { email: `someone${FOREIGN_EMAIL_DOMAIN}`, firstName: 'A', lastName: 'B', role: 'USER' } }), 'EMAIL_IN_USE');
  });

  it('rejects an incomplete body with INVALID_MODEL naming each field', async () => {
    const a = await call(sim, 'POST', '/api/v2/users', { body: { email: 'not-an-email', role: 'BOSS' } });
    expectError(a, 'INVALID_MODEL');
    const fields = (a.body as { details: Array<{ field: string }> }).details.map((d) => d.field).sort();
    expect(fields).toEqual(['email', 'firstName', 'lastName', 'role']);
    expectError(await call(sim, 'POST', '/api/v2/users'), 'INVALID_MODEL');
  });

  it('updates a user with PUT users?userIdentifier=, refusing unknown and non-API accounts', async () => {
    const user = sim.state.users[2]!;
    const put = await call(sim, 'PUT', `/api/v2/users?userIdentifier=${encodeURIComponent(user.email)}`, {
      body: { email: user.email, firstName: 'Renamed', lastName: user.lastName, role: 'ADMIN', organisationIdentifier: user.organisationIdentifier },
    });
    expect(put.status).toBe(204);
    expect(sim.state.users[2]).toMatchObject({ firstName: 'Renamed', role: 'ADMIN' });
    expectError(await call(sim, 'PUT', '/api/v2/users?userIdentifier=nobody@acme-training.example', { body: { email: 'x@y.example', firstName: 'a', lastName: 'b', role: 'USER' } }), 'USER_NOT_FOUND');
    const sso = sim.state.users.find((u) => u.accountType === 'SSO')!;
    expectError(await call(sim, 'PUT', `/api/v2/users?userIdentifier=${sso.id}`, { body: { email: sso.email, firstName: 'a', lastName: 'b', role: 'USER' } }), 'INVALID_USER_TYPE');
    expectError(await call(sim, 'PUT', '/api/v2/users', { body: { email: 'x@y.example', firstName: 'a', lastName: 'b', role: 'USER' } }), 'INVALID_MODEL');
  });

  it('sets passwords by rule and keeps only the fact that one was set', async () => {
    const user = sim.state.users[3]!;
    const weak = await call(sim, 'POST', `/api/v2/users/password?userIdentifier=${encodeURIComponent(user.email)}`, { body: { password: 'short' } });
    expectError(weak, 'INVALID_PASSWORD');
    expect((weak.body as { details: Array<{ rule: string }> }).details.map((d) => d.rule).sort()).toEqual(['MIN_LENGTH', 'REQUIRES_DIGIT']);
    expectError(await call(sim, 'POST', '/api/v2/users/password', { body: { password: 'Longenough1' } }), 'INVALID_MODEL');
    expectError(await call(sim, 'POST', '/api/v2/users/password?userIdentifier=ghost@acme-training.example', { body: { password: 'Longenough1' } }), 'USER_NOT_FOUND');
    const ok = await call(sim, 'POST', `/api/v2/users/password?userIdentifier=${user.id}`, { body: { password: 'Correct-Horse-9' } });
    expect(ok.status).toBe(204);
    expect(sim.state.accounts.get(user.id)).toMatchObject({ passwordSet: true, passwordChanges: 1 });
    expect(JSON.stringify([...sim.state.accounts.entries()])).not.toContain('Correct-Horse-9');
  });

  it('disables and enables idempotently (204 each time) and changes seats in use', async () => {
    const user = sim.state.users.find((u) => u.hasAccess)!;
    const seats = async (): Promise<{ seatsInUse: number; totalSeats: number }> => (await call(sim, 'GET', '/api/v2/users/seats')).body as { seatsInUse: number; totalSeats: number };
    const start = await seats();
    expect(start.seatsInUse).toBe(sim.state.users.filter((u) => u.hasAccess).length);
    expect(start.totalSeats).toBe(200);
    for (let i = 0; i < 2; i++) expect((await call(sim, 'PATCH', `/api/v2/users/${user.id}/disable`)).status).toBe(204);
    expect((await list<{ hasAccess: boolean }>(sim, `/api/v2/users?userId=${user.id}`)).entities[0]!.hasAccess).toBe(false);
    expect((await seats()).seatsInUse).toBe(start.seatsInUse - 1);
    for (let i = 0; i < 2; i++) expect((await call(sim, 'PATCH', `/api/v2/users/${user.id}/enable`)).status).toBe(204);
    expect((await seats()).seatsInUse).toBe(start.seatsInUse);
    expectError(await call(sim, 'PATCH', '/api/v2/users/00000000-0000-4000-8000-000000000000/disable'), 'USER_NOT_FOUND');
  });

  it('adds to and removes from groups idempotently, with the documented errors', async () => {
    const group = sim.state.groups[0]!;
    const user = sim.state.users.find((u) => !group.memberIds.has(u.id))!;
    for (let i = 0; i < 2; i++) expect((await call(sim, 'POST', `/api/v2/groups/${group.id}/users`, { body: { userId: user.id } })).status).toBe(204);
    expect(group.memberIds.has(user.id)).toBe(true);
    // Membership shows through results filtered by the group.
    const r = addResult(sim.state, { userId: user.id, dateCompleted: '2024-06-01T10:00:00.000Z' });
    const ids = (await walk(sim, `/api/v2/results?reportingFilters[]=${group.id}`)).flatMap((p) => p.entities.map((x) => x.id));
    expect(ids).toContain(r.id);
    for (let i = 0; i < 2; i++) expect((await call(sim, 'DELETE', `/api/v2/groups/${group.id}/users/${user.id}`)).status).toBe(204);
    expect(group.memberIds.has(user.id)).toBe(false);
    const missing = '00000000-0000-4000-8000-000000000000';
    expectError(await call(sim, 'POST', `/api/v2/groups/${missing}/users`, { body: { userId: user.id } }), 'GROUP_NOT_FOUND');
    expectError(await call(sim, 'POST', `/api/v2/groups/${group.id}/users`, { body: { userId: missing } }), 'USER_NOT_FOUND');
    expectError(await call(sim, 'POST', `/api/v2/groups/${group.id}/users`, { body: {} }), 'INVALID_MODEL');
    expectError(await call(sim, 'DELETE', `/api/v2/groups/${missing}/users/${user.id}`), 'GROUP_NOT_FOUND');
    expectError(await call(sim, 'DELETE', `/api/v2/groups/${group.id}/users/${missing}`), 'USER_NOT_FOUND');
  });

  it('returns log-in links as plain-text URLs, with USER_LOCKOUT and COUSRE_NOT_FOUND', async () => {
    const user = sim.state.users.find((u) => u.hasAccess && u.accountType === 'API')!;
    const course = sim.state.courses[0]!;
    const login = await call(sim, 'POST', `/api/v2/login?userIdentifier=${encodeURIComponent(user.email)}`);
    expect(login.status).toBe(200);
    expect(login.headers.get('content-type')).toMatch(/^text\/plain/);
    const url = new URL(login.text);
    expect(url.protocol).toBe('https:');
    expect(url.pathname).toBe('/account/login');
    expect(url.searchParams.get('userId')).toBe(user.id);
    expect(url.searchParams.get('orgId')).toBe(sim.state.organisationId);
    expect(url.searchParams.get('token')!.length).toBeGreaterThan(10);
    const auto = await call(sim, 'POST', `/api/v2/login/autostart?userIdentifier=${user.id}&courseId=${course.id}`);
    expect(auto.status).toBe(200);
    expect(new URL(auto.text).searchParams.get('moduleId')).toBe(course.id);
    expectError(await call(sim, 'POST', `/api/v2/login/autostart?userIdentifier=${user.id}&courseId=00000000-0000-4000-8000-000000000000`), 'COUSRE_NOT_FOUND');
    expectError(await call(sim, 'POST', '/api/v2/login/autostart?userIdentifier=ghost@acme-training.example&courseId=' + course.id), 'USER_NOT_FOUND');
    expectError(await call(sim, 'POST', '/api/v2/login'), 'INVALID_MODEL');
    setUserLocked(sim.state, user.id, true);
    expectError(await call(sim, 'POST', `/api/v2/login?userIdentifier=${user.id}`), 'USER_LOCKOUT');
    setUserLocked(sim.state, user.id, false);
    expect((await call(sim, 'POST', `/api/v2/login?userIdentifier=${user.id}`)).status).toBe(200);
  });
});

describe('simulator: plans, seats and options', () => {
  it('refuses a new user with USER_LIMIT_REACHED when every seat is taken', async () => {
    const sim = await startSimulator({ seed: 2, sizes: { users: 20, results: 10 } });
    try {
      const inUse = sim.state.users.filter((u) => u.hasAccess).length;
      expect(sim.state.seats.totalSeats).toBe(70);
      sim.state.seats.totalSeats = inUse + 1;
      const body = (n: number): { body: Record<string, string> } => ({ body: { email: `p${n}@acme-training.example`, firstName: 'P', lastName: String(n), role: 'USER' } });
      expect((await call(sim, 'POST', '/api/v2/users', body(1))).status).toBe(204);
      expectError(await call(sim, 'POST', '/api/v2/users', body(2)), 'USER_LIMIT_REACHED');
      expect((await call(sim, 'GET', '/api/v2/users/seats')).body).toEqual({ seatsInUse: inUse + 1, totalSeats: inUse + 1 });
    } finally {
      await sim.close();
    }
  });

  it('answers NO_UNLIMITED_PLAN without an unlimited plan, and 404 for users when the platform lacks it', async () => {
    const sim = await startSimulator({ sizes: { results: 10 }, unlimitedPlan: false, usersEndpoint: false, apiKey: 'k-123' });
    try {
      expect(sim.apiKey).toBe('k-123');
      expectError(await call(sim, 'GET', '/api/v2/users/seats'), 'NO_UNLIMITED_PLAN');
      expect((await call(sim, 'GET', '/api/v2/users')).status).toBe(404);
      expect((await call(sim, 'GET', '/api/v2/courses', { key: DEMO_API_KEY })).status).toBe(401);
    } finally {
      await sim.close();
    }
  });

  it('answers NO_GROUPS_AVAILABLE when the organisation has no groups, and guards DELETE users', async () => {
    const sim = await startSimulator({ sizes: { results: 10, users: 10, groups: 0 } });
    try {
      const user = sim.state.users[0]!;
      expectError(await call(sim, 'POST', `/api/v2/groups/00000000-0000-4000-8000-000000000000/users`, { body: { userId: user.id } }), 'NO_GROUPS_AVAILABLE');
      expect((await list(sim, '/api/v2/groups')).entities).toEqual([]);
      // An account holding a seat cannot be deleted; a disabled one can.
      expectError(await call(sim, 'DELETE', `/api/v2/users/${user.id}`), 'USER_SEAT_ASSIGNED');
      expect((await call(sim, 'PATCH', `/api/v2/users/${user.id}/disable`)).status).toBe(204);
      expect((await call(sim, 'DELETE', `/api/v2/users/${user.id}`)).status).toBe(204);
      expectError(await call(sim, 'DELETE', `/api/v2/users/${user.id}`), 'USER_NOT_FOUND');
      expect((await list(sim, `/api/v2/users?userId=${user.id}`)).entities).toEqual([]);
      expect((await call(sim, 'GET', '/api/v2/users/password')).status).toBe(405);
    } finally {
      await sim.close();
    }
  });

  it('generates the same data for the same seed and different data for another', () => {
    const options = { sizes: { ...DEFAULT_SIZES, results: 500 }, unlimitedPlan: true, usersEndpoint: true, dateBounds: 'exclusive-instant' as const };
    const snapshot = (seed: number): string => {
      const s = generateState({ ...options, seed });
      return JSON.stringify([s.organisationId, s.courses, s.filters, s.users, s.groups.map((g) => [g.id, g.name, g.courses, [...g.memberIds]]), s.results, s.undatedResults]);
    };
    expect(snapshot(42)).toBe(snapshot(42));
    expect(snapshot(43)).not.toBe(snapshot(42));
  });
});
