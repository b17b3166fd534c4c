import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetIdentity } from '../src/platform/client.ts';
import { budgetKeys } from '../src/platform/request-budget.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { grantsByBudget, grantsIn, maxGrantsInAnySecond } from './helpers/budget-grants.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { startWorkerProcess, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * The request budget is per API key, shared by every process (issue 20): two worker
 * processes syncing two organisations at once keep each key within its own budget in
 * every sliding second, and every row lands under its own organisation.
 * The budget is counted as it decides: each key's grants in Redis, by Redis's clock, read
 * from the workers' debug lines (helpers/budget-grants.ts), not by the simulators' arrival
 * stamps, which run late in clumps when this process is starved (5 > 4 once, by stamp).
 * (Serial: it runs with `npm run test:timing`.)
 */
const RPS = 4;
const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-orgs-budget-'));
let north: RunningSimulator;
let south: RunningSimulator;
let t: TestDatabase;
let env: Record<string, string>;
const prefix = testPrefix();
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  // The same seed: both keys list the same GUIDs, which each organisation must keep apart.
  [north, south, t] = await Promise.all([
    startSimulator({ seed: 21, apiKey: 'north-key-000000000000', sizes: { results: 400, users: 30 } }),
    startSimulator({ seed: 21, apiKey: 'south-key-000000000000', sizes: { results: 400, users: 30 } }),
    createTestDatabase(),
  ]);
  const file = path.join(dir, 'orgs.json');
  writeFileSync(
    file,
    JSON.stringify({
      organisations: [
        { slug: 'north', name: 'North', apiUrl: north.url, apiKey: { env: 'NORTH_KEY' }, requestsPerSecond: RPS },
        { slug: 'south', name: 'South', apiUrl: south.url, apiKey: { env: 'SOUTH_KEY' }, requestsPerSecond: RPS },
      ],
    }),
  );
  env = {
    DATABASE_URL: t.url, TRAINSYNC_OWNER_DATABASE_URL: t.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_ORGS_FILE: file,
    NORTH_KEY: north.apiKey,
    SOUTH_KEY: south.apiKey,
    LOG_FORMAT: 'json',
    // Debug: the budget's grant lines, which the test counts.
    LOG_LEVEL: 'debug',
    TRAINSYNC_METRICS_PORT: '0',
    // Nothing scheduled fires during the test: only what the CLI enqueues runs.
    TRAINSYNC_CRON_RESULTS: '0 0 1 1 *',
    TRAINSYNC_CRON_COURSES: '0 0 1 1 *',
    TRAINSYNC_CRON_FILTERS: '0 0 1 1 *',
    TRAINSYNC_CRON_USERS: '0 0 1 1 *',
    TRAINSYNC_CRON_GROUPS: '0 0 1 1 *',
    TRAINSYNC_CRON_SEATS: '0 0 1 1 *',
  };
  expect((await runCli(['migrate'], env)).code).toBe(0);
});

afterAll(async () => {
  for (const w of workers) w.child.kill('SIGKILL');
  await Promise.all([north?.close(), south?.close()]);
  await t?.drop();
  await dropPrefix(prefix);
  rmSync(dir, { recursive: true, force: true });
});

describe('request budgets of several organisations', () => {
  it('two workers syncing two organisations keep each key within its budget, and each row under its organisation', async () => {
    workers.push(startWorkerProcess(env), startWorkerProcess(env));
    await Promise.all(workers.map((w) => w.ready));
    const run = await runCli(['sync', 'all', '--org', 'all'], env);
    expect(run.code, run.stderr).toBe(0);

    const grants = grantsByBudget(grantsIn([...workers.map((w) => w.output()), run.stdout, run.stderr]));
    // Grants from the two keys' logs only.
    expect(grants.size).toBe(2);
    for (const sim of [north, south]) {
      expect(sim.requests.length).toBeGreaterThan(8);
      // Every request carried this simulator's key (the other organisation's never reached it)…
      expect(sim.requests.every((r) => r.status === 200)).toBe(true);
      // …each had its grant from that key's budget (one slot at 4/s: one grant per request)…
      const ofKey = grants.get(budgetKeys(prefix, budgetIdentity(new URL(sim.url).origin, sim.apiKey)).log) ?? [];
      expect(ofKey).toHaveLength(sim.requests.length);
      // …and no sliding second of Redis's clock held more of them than the key's budget, however the two workers shared the jobs.
      expect(maxGrantsInAnySecond(ofKey)).toBeLessThanOrEqual(RPS);
    }

    const { rows } = await t.pool.query<{ org: string; n: number }>('select org, count(*)::int as n from training.results group by org order by org');
    expect(rows).toEqual([
      { org: 'north', n: north.state.resultsById.size },
      { org: 'south', n: south.state.resultsById.size },
    ]);
  });
});
