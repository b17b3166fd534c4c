import { spawn } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.ts';
import { createPlatformClient } from '../src/platform/client.ts';
import { budgetKeyPrefix, budgetShape, createRequestBudget, grantLeaseMs } from '../src/platform/request-budget.ts';
import { maxInWindow, NO_FAULTS, startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * The request budget shared through Redis: separate processes together never exceed
 * it in any sliding second, a 429 pauses everyone, and lost Redis state is rebuilt.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const logLines: string[] = [];
const log = createLogger(
  'info',
  new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(chunk.toString('utf8'));
      callback();
    },
  }),
);

let sim: RunningSimulator;
const prefixes: string[] = [];

function newPrefix(): string {
  const prefix = testPrefix();
  prefixes.push(prefix);
  return prefix;
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 2, sizes: { results: 0, users: 20 } });
});

afterAll(async () => {
  await sim?.close();
  for (const prefix of prefixes) await dropPrefix(prefix);
});

beforeEach(() => {
  sim.setFaults({ ...NO_FAULTS });
  sim.resetRequests();
});

interface Child {
  ready: Promise<void>;
  go(): void;
  summary: Promise<{ done: number; ms: number; code: number | null; output: string }>;
}

function startRateClient(options: Record<string, unknown>): Child {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/run-ts.js'), 'test/fixtures/rate-client.ts', JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    if (stdout.includes('ready\n')) markReady();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const summary = new Promise<{ done: number; ms: number; code: number | null; output: string }>((resolve) => {
    child.on('exit', (code) => {
      const last = stdout.trim().split('\n').at(-1) ?? '{}';
      let parsed: { done?: number; ms?: number } = {};
      try {
        parsed = JSON.parse(last) as { done?: number; ms?: number };
      } catch {
        // Reported through `output` below.
      }
      resolve({ done: parsed.done ?? -1, ms: parsed.ms ?? -1, code, output: stdout + stderr });
    });
  });
  return { ready, go: () => child.stdin.write('go\n'), summary };
}

/** Two processes on one budget, started together; each must finish all its requests. */
async function twoProcesses(rps: number, perProcess: number, concurrency: number): Promise<Array<{ ms: number }>> {
  const options = { apiUrl: sim.url, apiKey: sim.apiKey, redisUrl: REDIS_URL, keyPrefix: newPrefix(), requestsPerSecond: rps, count: perProcess, concurrency };
  const children = [startRateClient(options), startRateClient(options)];
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.go();
  const results = await Promise.all(children.map((c) => c.summary));
  for (const r of results) expect({ code: r.code, done: r.done }, r.output).toEqual({ code: 0, done: perProcess });
  return results;
}

describe('request budget', () => {
  it('two processes sharing one Redis never exceed the budget together', async () => {
    const rps = 20;
    const perProcess = 40;
    const results = await twoProcesses(rps, perProcess, 4);

    const requests = sim.requests;
    expect(requests).toHaveLength(2 * perProcess);
    expect(requests.every((r) => r.status === 200)).toBe(true);
    // The two processes really overlapped: each one's span covers most of the other's.
    expect(Math.min(...results.map((r) => r.ms))).toBeGreaterThan(((2 * perProcess) / rps - 1.5) * 1000);
    expect(maxInWindow(requests, 1000)).toBeLessThanOrEqual(rps);
    const span = requests.at(-1)!.at - requests[0]!.at;
    expect(span).toBeGreaterThanOrEqual(((2 * perProcess) / rps - 1) * 1000);
  });

  it('at a budget high enough to reserve grants in batches, two processes still never exceed it together', async () => {
    const rps = 200;
    expect(grantLeaseMs(rps, 0.05)).toBeGreaterThan(0);
    const perProcess = 250;
    await twoProcesses(rps, perProcess, 8);

    const requests = sim.requests;
    expect(requests).toHaveLength(2 * perProcess);
    expect(maxInWindow(requests, 1000)).toBeLessThanOrEqual(rps);
    // The budget was used, not just respected: batches lapsing unused would show here.
    const span = requests.at(-1)!.at - requests[0]!.at;
    expect(span).toBeLessThan(((2 * perProcess) / rps) * 1000 * 1.5);
  });

  it('a 429 seen by one client pauses every client on the same budget for Retry-After', async () => {
    const keyPrefix = newPrefix();
    const make = (): ReturnType<typeof createPlatformClient> =>
      createPlatformClient({ apiUrl: sim.url, apiKey: sim.apiKey, log, redisUrl: REDIS_URL, keyPrefix, requestsPerSecond: 20, retryBaseDelayMs: 5 });
    const a = make();
    const b = make();
    try {
      sim.setFaults({ rateLimitEvery: 12, retryAfter: '1' });
      const run = async (client: ReturnType<typeof make>): Promise<void> => {
        for (let i = 0; i < 10; i++) await client.getSeats();
      };
      await Promise.all([run(a), run(b)]);
    } finally {
      await a.close();
      await b.close();
    }
    const requests = sim.requests;
    const limited = requests.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(requests.filter((r) => r.status === 200)).toHaveLength(20);
    for (const hit of limited) {
      // Anything granted before the pause was written may still land just after the 429;
      // after that, neither client sends until Retry-After has passed.
      const during = requests.filter((r) => r.at >= hit.at + 60 && r.at < hit.at + 1000);
      expect(during).toEqual([]);
    }
    expect(logLines.some((l) => l.includes('every process pauses'))).toBe(true);
  });

  it('only ever extends the shared pause', async () => {
    const budget = createRequestBudget({ redisUrl: REDIS_URL, keyPrefix: newPrefix(), origin: 'http://127.0.0.1:1', requestsPerSecond: 100, log });
    try {
      expect(await budget.pausedForMs()).toBe(0);
      await budget.pauseFor(5000);
      await budget.pauseFor(100);
      expect(await budget.pausedForMs()).toBeGreaterThan(4000);
    } finally {
      await budget.close();
    }
  });

  it('keeps granting after its Redis keys vanish, and its keys expire on their own', async () => {
    const keyPrefix = newPrefix();
    const budget = createRequestBudget({ redisUrl: REDIS_URL, keyPrefix, origin: 'http://127.0.0.1:1', requestsPerSecond: 200, log });
    const redis = new Redis(REDIS_URL);
    try {
      for (let i = 0; i < 3; i++) await budget.acquire();
      const keys = await redis.keys(`${budgetKeyPrefix(keyPrefix)}*`);
      expect(keys).toEqual([budget.limiterId]);
      expect(await redis.ttl(budget.limiterId)).toBeGreaterThan(0);
      await redis.del(...keys);
      for (let i = 0; i < 3; i++) await budget.acquire();
      expect(await redis.exists(budget.limiterId)).toBe(1);
    } finally {
      await budget.close();
      redis.disconnect();
    }
  });

  it('shapes the budget so no second can hold more than the budget', () => {
    for (const rps of [1, 3, 10, 20, 50, 99, 1000, 10_000]) {
      const { slots, windowMs } = budgetShape(rps, 0.05);
      expect(slots).toBeGreaterThanOrEqual(1);
      expect(Number.isInteger(windowMs)).toBe(true);
      expect(slots * Math.ceil(1000 / windowMs)).toBeLessThanOrEqual(rps);
    }
    expect(budgetShape(10, 0.05)).toEqual({ slots: 1, windowMs: 105 });
  });

  it('leases grants reserved ahead only as long as the shape leaves room for, and not at all with one slot', () => {
    for (const rps of [1, 3, 10, 20, 42, 50, 99, 200, 1000, 10_000]) {
      const { slots, windowMs } = budgetShape(rps, 0.05);
      const lease = grantLeaseMs(rps, 0.05);
      expect(lease).toBeGreaterThanOrEqual(0);
      // Held up to one lease, arriving up to one more: grants of 1000 + 2 × lease ms.
      expect(slots * Math.ceil((1000 + 2 * lease) / windowMs)).toBeLessThanOrEqual(rps);
      if (slots === 1) expect(lease).toBe(0);
    }
    expect(grantLeaseMs(10_000, 0.05)).toBeGreaterThanOrEqual(20);
  });
});
