import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSimulatorCommand } from '../src/commands/simulator.ts';
import { loadConfig } from '../src/config.ts';
import { allResults, DEMO_API_KEY, ORG_EMAIL_DOMAIN, startSimulator, type ApiCourse, type ApiResult, type ApiUser, type RunningSimulator } from '../src/simulator/index.ts';

/** Several organisations on one simulator, one key each: what each key sees, and what the platform keeps unique. */

const KEY_A = 'key-org-a';
const KEY_B = 'key-org-b';
const ID_A = '0a0a0a0a-0000-4000-8000-00000000000a';

interface Answer {
  status: number;
  body: unknown;
  text: string;
}

async function call(sim: RunningSimulator, key: string | null, method: string, path: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${sim.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

async function entities<T>(sim: RunningSimulator, key: string, path: string): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; ; page += 1) {
    const a = await call(sim, key, 'GET', `${path}${path.includes('?') ? '&' : '?'}page=${page}`);
    expect(a.status, a.text).toBe(200);
    const envelope = a.body as { entities: T[]; totalEntities: number };
    out.push(...envelope.entities);
    if (envelope.entities.length === 0 || out.length >= envelope.totalEntities) return out;
  }
}

const code = (a: Answer): unknown => (a.body as { code?: string } | undefined)?.code;

describe('simulator with several organisations', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 5,
      sizes: { courses: 8, users: 30, results: 200, groups: 2 },
      organisations: [
        { apiKey: KEY_A, id: ID_A, name: 'alpha' },
        { apiKey: KEY_B, name: 'beta', sizes: { results: 120 } },
      ],
      overlap: true,
    });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('scopes every list to the key: two keys see different data', async () => {
    const [a, b] = sim.organisations;
    expect(a!.id).toBe(ID_A);
    expect(b!.id).not.toBe(ID_A);
    const resultsA = await entities<ApiResult>(sim, KEY_A, '/api/v2/results');
    const resultsB = await entities<ApiResult>(sim, KEY_B, '/api/v2/results');
    // A query without dates lists every result, the undated ones included.
    expect(resultsA.length).toBe(allResults(a!.state).length);
    expect(resultsB.length).toBe(allResults(b!.state).length);
    const idsA = new Set(resultsA.map((r) => r.id));
    expect(resultsB.some((r) => idsA.has(r.id))).toBe(false);
    // A result of one organisation is not found with the other's key.
    const one = resultsA[0]!;
    expect((await call(sim, KEY_A, 'GET', `/api/v2/results/${one.id}`)).status).toBe(200);
    expect(code(await call(sim, KEY_B, 'GET', `/api/v2/results/${one.id}`))).toBe('RESULT_NOT_FOUND');
    const usersA = await entities<ApiUser>(sim, KEY_A, '/api/v2/users');
    const usersB = await entities<ApiUser>(sim, KEY_B, '/api/v2/users');
    expect(usersA.every((u) => u.email.endsWith(ORG_EMAIL_DOMAIN) || u.id === sim.overlap!.user!.id)).toBe(true);
    // E-mails are unique platform-wide: only the shared user is in both lists.
    const emailsA = new Set(usersA.map((u) => u.email));
    expect(usersB.filter((u) => emailsA.has(u.email)).map((u) => u.id)).toEqual([sim.overlap!.user!.id]);
    const filtersA = (await call(sim, KEY_A, 'GET', '/api/v2/filters')).body as { entities: Array<{ id: string }> };
    const filtersB = (await call(sim, KEY_B, 'GET', '/api/v2/filters')).body as { entities: Array<{ id: string }> };
    expect(filtersA.entities.map((f) => f.id)).not.toEqual(filtersB.entities.map((f) => f.id));
    const groupsA = (await call(sim, KEY_A, 'GET', '/api/v2/groups')).body as { entities: Array<{ id: string }> };
    const groupsB = (await call(sim, KEY_B, 'GET', '/api/v2/groups')).body as { entities: Array<{ id: string }> };
    expect(groupsA.entities.map((g) => g.id)).toEqual(a!.state.groups.map((g) => g.id));
    expect(groupsB.entities.map((g) => g.id)).toEqual(b!.state.groups.map((g) => g.id));
    expect((await call(sim, KEY_B, 'GET', '/api/v2/users/seats')).body).toEqual({ seatsInUse: b!.state.users.filter((u) => u.hasAccess).length, totalSeats: 80 });
  });

  it('lists the shared course GUIDs in both organisations, each with its own pass rate, and results carry it', async () => {
    const overlap = sim.overlap!;
    expect(overlap.courseIds).toHaveLength(3);
    const coursesA = await entities<ApiCourse>(sim, KEY_A, '/api/v2/courses');
    const coursesB = await entities<ApiCourse>(sim, KEY_B, '/api/v2/courses');
    const resultsA = await entities<ApiResult>(sim, KEY_A, '/api/v2/results');
    const resultsB = await entities<ApiResult>(sim, KEY_B, '/api/v2/results');
    for (const id of overlap.courseIds) {
      const inA = coursesA.find((c) => c.id === id)!;
      const inB = coursesB.find((c) => c.id === id)!;
      expect(inA.name).toBe(inB.name);
      expect(inA.passRate).not.toBe(inB.passRate);
      expect(overlap.passRates[id]).toEqual({ [sim.organisations[0]!.id]: inA.passRate, [sim.organisations[1]!.id]: inB.passRate });
      for (const r of resultsA.filter((x) => x.courseId === id)) expect(r.passRate).toBe(inA.passRate);
      for (const r of resultsB.filter((x) => x.courseId === id)) expect(r.passRate).toBe(inB.passRate);
    }
    // The other courses are each organisation's own.
    const idsA = new Set(coursesA.map((c) => c.id));
    expect(coursesB.filter((c) => idsA.has(c.id)).map((c) => c.id).sort()).toEqual([...overlap.courseIds].sort());
    expect(resultsB.some((r) => overlap.courseIds.includes(r.courseId))).toBe(true);
  });

  it('lists the shared user in both organisations, same GUID and e-mail, with results in each', async () => {
    const user = sim.overlap!.user!;
    expect(user.organisationIds).toEqual([sim.organisations[0]!.id, sim.organisations[1]!.id]);
    for (const key of [KEY_A, KEY_B]) {
      const found = (await call(sim, key, 'GET', `/api/v2/users?userId=${user.id}`)).body as { entities: ApiUser[] };
      expect(found.entities).toHaveLength(1);
      expect(found.entities[0]).toMatchObject({ id: user.id, email: user.email, accountType: 'INVITE' });
      const results = await entities<ApiResult>(sim, key, '/api/v2/results');
      expect(results.some((r) => r.userId === user.id)).toBe(true);
    }
    // Not an API account, so it cannot be edited; and it cannot be deleted from one organisation.
    expect(code(await call(sim, KEY_A, 'PUT', `/api/v2/users?userIdentifier=${user.id}`, { email: user.email, firstName: 'X', lastName: 'Y', role: 'USER' }))).toBe('INVALID_USER_TYPE');
    expect(code(await call(sim, KEY_B, 'DELETE', `/api/v2/users/${user.id}`))).toBe('USER_IN_OTHER_ORG');
  });

  it('answers 401 to a key no organisation has, or none', async () => {
    expect((await call(sim, 'not-a-key', 'GET', '/api/v2/courses')).status).toBe(401);
    expect((await call(sim, null, 'GET', '/api/v2/courses')).status).toBe(401);
    expect((await call(sim, DEMO_API_KEY, 'GET', '/api/v2/courses')).status).toBe(401);
    const res = await fetch(`${sim.url}/api/v2/courses`, { headers: { authorization: `bearer ${KEY_B}` } });
    expect(res.status).toBe(200);
  });

  it('keeps provisioning in its organisation', async () => {
    const email = 'new.starter@alpha-only.example';
    expect((await call(sim, KEY_A, 'POST', '/api/v2/users', { email, firstName: 'New', lastName: 'Starter', role: 'USER' })).status).toBe(204);
    const inA = (await call(sim, KEY_A, 'GET', `/api/v2/users?email=${email}`)).body as { entities: ApiUser[] };
    const inB = (await call(sim, KEY_B, 'GET', `/api/v2/users?email=${email}`)).body as { entities: ApiUser[] };
    expect(inA.entities).toHaveLength(1);
    expect(inB.entities).toHaveLength(0);
    const id = inA.entities[0]!.id;
    // The other organisation's key cannot reach the account.
    expect(code(await call(sim, KEY_B, 'PATCH', `/api/v2/users/${id}/disable`))).toBe('USER_NOT_FOUND');
    expect(code(await call(sim, KEY_B, 'PUT', `/api/v2/users?userIdentifier=${email}`, { email, firstName: 'B', lastName: 'B', role: 'USER' }))).toBe('USER_NOT_FOUND');
    expect(code(await call(sim, KEY_B, 'POST', `/api/v2/users/password?userIdentifier=${email}`, { password: 'Passw0rd!' }))).toBe('USER_NOT_FOUND');
    const groupA = sim.organisations[0]!.state.groups[0]!.id;
    const groupB = sim.organisations[1]!.state.groups[0]!.id;
    expect(code(await call(sim, KEY_B, 'POST', `/api/v2/groups/${groupA}/users`, { userId: id }))).toBe('GROUP_NOT_FOUND');
    expect(code(await call(sim, KEY_B, 'POST', `/api/v2/groups/${groupB}/users`, { userId: id }))).toBe('USER_NOT_FOUND');
    expect((await call(sim, KEY_A, 'POST', `/api/v2/groups/${groupA}/users`, { userId: id })).status).toBe(204);
    expect((await call(sim, KEY_A, 'PATCH', `/api/v2/users/${id}/disable`)).status).toBe(204);
    expect(sim.organisations[0]!.state.usersById.get(id)!.hasAccess).toBe(false);
    expect(sim.organisations[1]!.state.usersById.has(id)).toBe(false);
    // Deleting an account of one organisation only is allowed (it holds no seat once disabled).
    expect((await call(sim, KEY_A, 'DELETE', `/api/v2/users/${id}`)).status).toBe(204);
  });

  it('keeps e-mails unique across the platform', async () => {
    const userB = sim.organisations[1]!.state.users.find((u) => u.accountType === 'API' && u.id !== sim.overlap!.user!.id)!;
    const userA = sim.organisations[0]!.state.users.find((u) => u.accountType === 'API' && u.id !== sim.overlap!.user!.id)!;
    const model = (email: string): Record<string, string> => ({ email, firstName: 'Dup', lastName: 'Licate', role: 'USER' });
    // Another organisation's user has it: EMAIL_IN_USE; this organisation's: EMAIL_IN_USE_ORG_CONNECTED.
    expect(code(await call(sim, KEY_A, 'POST', '/api/v2/users', model(userB.email.toUpperCase())))).toBe('EMAIL_IN_USE');
    expect(code(await call(sim, KEY_B, 'POST', '/api/v2/users', model(userB.email)))).toBe('EMAIL_IN_USE_ORG_CONNECTED');
    expect(code(await call(sim, KEY_A, 'POST', '/api/v2/users', model(sim.overlap!.user!.email)))).toBe('EMAIL_IN_USE_ORG_CONNECTED');
    expect(code(await call(sim, KEY_B, 'POST', '/api/v2/users', model(sim.overlap!.user!.email)))).toBe('EMAIL_IN_USE_ORG_CONNECTED');
    // Changing an e-mail to one another organisation's user has.
    const put = await call(sim, KEY_A, 'PUT', `/api/v2/users?userIdentifier=${userA.id}`, { ...model(userB.email), firstName: userA.firstName, lastName: userA.lastName });
    expect(code(put)).toBe('EMAIL_IN_USE');
    expect(sim.organisations[0]!.state.usersById.get(userA.id)!.email).toBe(userA.email);
    // An e-mail created in one organisation is then taken in the other.
    const email = 'first.come@beta-first.example';
    expect((await call(sim, KEY_B, 'POST', '/api/v2/users', model(email))).status).toBe(204);
    expect(code(await call(sim, KEY_A, 'POST', '/api/v2/users', model(email)))).toBe('EMAIL_IN_USE');
  });

  it('counts requests per key, and selects an organisation in the admin calls with ?org=', async () => {
    sim.resetRequests();
    for (let i = 0; i < 3; i += 1) await call(sim, KEY_A, 'GET', '/api/v2/courses');
    await call(sim, KEY_B, 'GET', '/api/v2/courses');
    await call(sim, 'wrong', 'GET', '/api/v2/courses');
    const counts = sim.requestsByOrganisation();
    expect(counts[sim.organisations[0]!.id]).toMatchObject({ total: 3 });
    expect(counts[sim.organisations[1]!.id]).toMatchObject({ total: 1, maxInAnyWindow: 1, maxInAnyClockSecond: 1 });
    expect(Object.values(counts[sim.organisations[0]!.id]!.perSecond).reduce((x, y) => x + y, 0)).toBe(3);
    const viaHttp = (await (await fetch(`${sim.url}/__simulator/requests/organisations`)).json()) as { organisations: Array<{ name: string; total: number; maxInAnyWindow: number }> };
    expect(viaHttp.organisations.map((o) => [o.name, o.total])).toEqual([
      ['alpha', 3],
      ['beta', 1],
    ]);
    const summary = async (q: string): Promise<{ status: number; body: { organisationId?: string; name?: string } }> => {
      const res = await fetch(`${sim.url}/__simulator/state/summary${q}`);
      return { status: res.status, body: (await res.json()) as { organisationId?: string } };
    };
    expect((await summary('')).body.organisationId).toBe(ID_A);
    expect((await summary('?org=beta')).body.organisationId).toBe(sim.organisations[1]!.id);
    expect((await summary(`?org=${ID_A.toUpperCase()}`)).body.name).toBe('alpha');
    expect((await summary('?org=gamma')).status).toBe(404);
    const listing = (await (await fetch(`${sim.url}/__simulator/organisations`)).json()) as { organisations: Array<{ name: string }>; overlap: { courseIds: string[] } };
    expect(listing.organisations.map((o) => o.name)).toEqual(['alpha', 'beta']);
    expect(listing.overlap.courseIds).toEqual(sim.overlap!.courseIds);
    expect(sim.organisation(KEY_B).name).toBe('beta');
    expect(sim.organisation('alpha').id).toBe(ID_A);
  });
});

describe('simulator webhooks with several organisations', () => {
  let sim: RunningSimulator;
  let receiver: http.Server;
  const received: Array<{ path: string; body: string; signature: string | undefined }> = [];
  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const signature = req.headers['platform-signature'];
        received.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), signature: typeof signature === 'string' ? signature : undefined });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks/platform`;
    sim = await startSimulator({
      seed: 12,
      sizes: { courses: 4, users: 10, results: 20 },
      webhooks: { retryBaseMs: 10 },
      organisations: [
        { apiKey: KEY_A, name: 'alpha', webhooks: { url: `${base}/alpha` } },
        { apiKey: KEY_B, name: 'beta', webhooks: { url: `${base}/beta` } },
      ],
    });
  });
  afterAll(async () => {
    await sim.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  const hmac = (body: string, secret: string): string => createHmac('sha256', Buffer.from(secret, 'base64')).update(body).digest('base64');

  it("sends each organisation's events to its URL, with its organisationId, signed with its own secret", async () => {
    const [a, b] = sim.organisations;
    expect(a!.webhooks.settings.secret).not.toBe(b!.webhooks.settings.secret);
    const [done] = a!.webhooks.completeCourse();
    // Over HTTP too: ?org= picks the organisation.
    const res = await fetch(`${sim.url}/__simulator/webhooks/complete?org=beta`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(200);
    await a!.webhooks.idle();
    await b!.webhooks.idle();
    expect(received).toHaveLength(2);
    for (const [org, name] of [
      [a!, 'alpha'],
      [b!, 'beta'],
    ] as const) {
      const delivery = received.find((d) => d.path.endsWith(`/${name}`))!;
      const envelope = JSON.parse(delivery.body) as { organisationId: string; eventType: string; data: { resultId: string } };
      expect(envelope).toMatchObject({ organisationId: org.id, eventType: 'COURSE_COMPLETE' });
      expect(delivery.signature).toBe(hmac(delivery.body, org.webhooks.settings.secret));
      const other = org === a ? b! : a!;
      expect(delivery.signature).not.toBe(hmac(delivery.body, other.webhooks.settings.secret));
      // The completion is in that organisation's data only.
      expect(org.state.resultsById.has(envelope.data.resultId)).toBe(true);
      expect(other.state.resultsById.has(envelope.data.resultId)).toBe(false);
    }
    expect(JSON.parse(received.find((d) => d.path.endsWith('/alpha'))!.body).data.resultId).toBe(done!.resultId);
    const config = (await (await fetch(`${sim.url}/__simulator/webhooks/config?org=beta`)).json()) as { url: string };
    expect(config.url).toMatch(/\/beta$/);
  });
});

describe('simulator organisations: defaults and mistakes', () => {
  it('serves exactly one organisation with the demo key when none are listed', async () => {
    const sim = await startSimulator({ seed: 1, sizes: { results: 10 } });
    try {
      expect(sim.organisations).toHaveLength(1);
      expect(sim.apiKey).toBe(DEMO_API_KEY);
      expect(sim.organisations[0]!.state).toBe(sim.state);
      expect(sim.webhooks).toBe(sim.organisations[0]!.webhooks);
      expect(sim.overlap).toBeUndefined();
      expect((await call(sim, DEMO_API_KEY, 'GET', '/api/v2/courses')).status).toBe(200);
    } finally {
      await sim.close();
    }
  });

  it('gives the first of several organisations the data one organisation of the same seed has', async () => {
    const one = await startSimulator({ seed: 3, sizes: { results: 30 } });
    const two = await startSimulator({ seed: 3, sizes: { results: 30 }, organisations: [{ apiKey: 'a' }, { apiKey: 'b' }] });
    try {
      expect(two.state.organisationId).toBe(one.state.organisationId);
      expect(two.state.results.map((r) => r.id)).toEqual(one.state.results.map((r) => r.id));
      expect(two.organisations[1]!.state.organisationId).not.toBe(one.state.organisationId);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it('refuses a key given twice, apiKey beside organisations, and an overlap of one', async () => {
    await expect(startSimulator({ organisations: [{ apiKey: 'x' }, { apiKey: 'x' }] })).rejects.toThrow(/same apiKey/);
    await expect(startSimulator({ apiKey: 'y', organisations: [{ apiKey: 'x' }] })).rejects.toThrow(/do not go together/);
    await expect(startSimulator({ overlap: true })).rejects.toThrow(/two organisations/);
    await expect(startSimulator({ organisations: [{ apiKey: 'x', id: ID_A }, { apiKey: 'y', id: ID_A }] })).rejects.toThrow(/same id/);
  });
});

describe('trainsync simulator --orgs', () => {
  it('serves N organisations with demo-key-1…N and prints each key variable', async () => {
    let printed = '';
    let url = '';
    const program = new Command('trainsync').exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    registerSimulatorCommand(program, {
      loadConfig: () => loadConfig({}),
      write: (t) => {
        printed += t;
        url = /API URL (\S+)/.exec(t)?.[1] ?? url;
      },
      stopped: async () => {
        // While it serves: each key answers with its own organisation.
        const ids = new Set<string>();
        for (const key of ['demo-key-1', 'demo-key-2', 'demo-key-3']) {
          const res = await fetch(`${url}/api/v2/users?page=1`, { headers: { authorization: `Bearer ${key}` } });
          expect(res.status).toBe(200);
          const first = ((await res.json()) as { entities: ApiUser[] }).entities[0]!;
          ids.add(first.id);
        }
        expect(ids.size).toBe(3);
        expect((await fetch(`${url}/api/v2/users`, { headers: { authorization: `Bearer ${DEMO_API_KEY}` } })).status).toBe(401);
      },
    });
    const dir = await mkdtemp(path.join(tmpdir(), 'sim-orgs-'));
    try {
      const file = path.join(dir, 'orgs.json');
      await program.parseAsync(['simulator', '--orgs', '3', '--overlap', '--results', '20', '--users', '10', '--orgs-file', file, '--webhook-url', 'http://127.0.0.1:9/hooks/{org}'], { from: 'user' });
      expect(printed).toContain('ORG01_API_KEY=demo-key-1');
      expect(printed).toContain('ORG03_API_KEY=demo-key-3');
      expect(printed).toMatch(/ORG02_WEBHOOK_SECRET=[A-Za-z0-9+/]+=*\n/);
      expect(printed).toContain('webhooks to http://127.0.0.1:9/hooks/org02');
      expect(printed).toContain('shared course GUIDs:');
      // The orgs file names the variables, never a key or a secret.
      const written = await readFile(file, 'utf8');
      expect(JSON.parse(written)).toEqual({
        organisations: ['org01', 'org02', 'org03'].map((slug) => ({
          slug,
          name: slug,
          apiUrl: url,
          apiKey: { env: `${slug.toUpperCase()}_API_KEY` },
          webhookSecret: { env: `${slug.toUpperCase()}_WEBHOOK_SECRET` },
        })),
      });
      expect(written).not.toContain('demo-key');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await expect(program.parseAsync(['simulator', '--overlap'], { from: 'user' })).rejects.toThrow(/--orgs 2 or more/);
  });
});

describe('simulator child process with organisations', () => {
  it('prints each organisation and serves each key', { timeout: 30_000 }, async () => {
    const options = { sizes: { results: 30, users: 10 }, organisations: [{ apiKey: 'child-a', name: 'org01' }, { apiKey: 'child-b', name: 'org02' }], overlap: { courses: 2 } };
    const child = spawn(process.execPath, ['bin/run-ts.js', 'src/simulator/child.ts', JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
      const info = JSON.parse(line) as { url: string; apiKey: string; organisations: Array<{ id: string; name: string; apiKey: string }> };
      expect(info.apiKey).toBe('child-a');
      expect(info.organisations.map((o) => [o.name, o.apiKey])).toEqual([
        ['org01', 'child-a'],
        ['org02', 'child-b'],
      ]);
      for (const o of info.organisations) {
        const res = await fetch(`${info.url}/api/v2/courses`, { headers: { authorization: `Bearer ${o.apiKey}` } });
        expect(res.status).toBe(200);
      }
      const listing = (await (await fetch(`${info.url}/__simulator/organisations`)).json()) as { overlap: { courseIds: string[] } };
      expect(listing.overlap.courseIds).toHaveLength(2);
      child.stdin!.end();
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
