import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { logRecords, startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/** `trainsync worker` serves the console once a user is configured (the browser tests drive it in-process). */

let sim: RunningSimulator;
let database: TestDatabase;
let prefix: string;
let worker: WorkerProcess;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, sizes: { users: 5, courses: 2, results: 5 } });
  database = await createTestDatabase();
  prefix = testPrefix();
  const hash = await hashConsolePassword('worker-console-pass', { N: 2 ** 12, r: 8, p: 1 });
  worker = startWorkerProcess({
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_CONSOLE_PORT: '0',
    TRAINSYNC_CONSOLE_USERS: `ana:viewer:${hash}`,
    LOG_FORMAT: 'json',
  }, ['--no-schedules']);
});

afterAll(async () => {
  worker?.child.kill('SIGTERM');
  await worker?.exited;
  await sim?.close();
  await database?.drop();
  await dropPrefix(prefix);
});

describe('the console beside the worker', () => {
  it('is served by `trainsync worker` behind its log-in, with the security headers', async () => {
    const port = await waitFor(async () => logRecords(worker.output()).find((r) => r.msg === 'serving the console')?.port as number | undefined, 60_000, 'the console to start');
    const base = `http://127.0.0.1:${port}`;
    const home = await fetch(`${base}/`, { redirect: 'manual' });
    expect(home.status).toBe(302);
    expect(home.headers.get('location')).toBe('/login');
    const login = await fetch(`${base}/login`);
    expect(login.status).toBe(200);
    expect(login.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(login.headers.get('x-frame-options')).toBe('DENY');
    expect(await login.text()).toContain('name="_csrf"');
    const queues = await fetch(`${base}/queues/api/queues`, { redirect: 'manual' });
    expect(queues.status).toBe(401);
    expect(worker.output()).not.toContain('worker-console-pass');
  });
});
