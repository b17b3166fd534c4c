import { Writable } from 'node:stream';
import { Command } from 'commander';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { demoQueuePrefix, registerDemoCommand } from '../src/commands/demo.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

let database: TestDatabase;
const prefix = testPrefix();

beforeAll(async () => {
  database = await createTestDatabase({ migrated: false });
});
afterAll(async () => {
  await database?.drop();
  await dropPrefix(prefix);
});

async function demo(): Promise<string> {
  let out = '';
  const program = new Command().exitOverride();
  const sink = new Writable({ write: (_chunk, _enc, cb) => cb() });
  registerDemoCommand(program, {
    createLogger: (config) => createLogger(config.LOG_LEVEL, sink),
    jobs: allJobs,
    env: { DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl, REDIS_URL, TRAINSYNC_REQUESTS_PER_SECOND: '1000' },
    write: (text) => (out += text),
    queuePrefix: prefix,
  });
  await program.parseAsync(['node', 'trainsync', 'demo']);
  return out;
}

describe('trainsync demo', () => {
  it('syncs, provisions the sample feed, reports; a second run against a fresh simulator repairs the drift and reconciles to 0', async () => {
    const first = await demo();
    expect(process.exitCode ?? 0).toBe(0);
    // pages, requests, inserted
    expect(first).toMatch(/│ results\s+│ ok\s+│ 60\s+│ 60\s+│ 3000 /);
    expect(first).toMatch(/first run: 300 of 300 existing accounts match feed rows/);
    expect(first).toMatch(/│ create-user\s+│ 5 /);
    expect(first).toMatch(/│ disable\s+│ 3 /);
    // The outcome table: action, succeeded, failed, needs-identity, queued, skipped.
    for (const [kind, n] of [['create-user', 5], ['disable', 3], ['enable', 1], ['add-to-group', 313]] as const) {
      expect(first).toMatch(new RegExp(`│ ${kind}\\s+│ ${n}\\s+│ 0\\s+│ 0\\s+│ 0\\s+│ 0\\s+│`));
    }
    expect(first).toContain('row error: hr-feed.csv line 307, field email');
    expect(first).toMatch(/replanning the same feed now: 0 actions/);
    expect(first).toMatch(/│ trainsync\.identities\s+│ 305 /);
    expect(first).toContain('training.course_completion');

    expect(first).toContain('HR against the platform: 0 discrepancies');

    // The simulator starts from its seed again: leavers have access, joiners no account.
    const second = await demo();
    expect(second).toMatch(/│ disable\s+│ 3 /);
    expect(second).toMatch(/│ create-user\s+│ 5 /);
    expect(second).toMatch(/\d+ of these actions repair drift/);
    expect(second).toMatch(/repair: disable .*platform shows access \(training\.users as of .*\); HR/);
    expect(second).toMatch(/replanning the same feed now: 0 actions/);
    expect(second).toContain('HR against the platform: 0 discrepancies');
  });
});

/** How many keys live under `prefix:` (BullMQ's and the request budget's). */
async function keysUnder(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  try {
    let count = 0;
    for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 1000 }) as AsyncIterable<string[]>) count += keys.length;
    return count;
  } finally {
    redis.disconnect();
  }
}

describe('two demos at once (npm run demo twice)', () => {
  let shared: TestDatabase;
  const given = testPrefix();
  const used: string[] = [];

  beforeAll(async () => {
    shared = await createTestDatabase({ migrated: false });
  });
  afterAll(async () => {
    await shared?.drop();
    for (const prefix of [given, ...used]) await dropPrefix(prefix);
  });

  it('each run has its own Redis prefix', () => {
    const a = demoQueuePrefix();
    const b = demoQueuePrefix();
    expect(a).toMatch(/^trainsync-demo-[0-9a-f]{8}$/);
    expect(b).toMatch(/^trainsync-demo-[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
  });

  it('both end well on one database, each with its own prefix, whose keys are gone afterwards', async () => {
    // A deployment's prefix in the environment is not the demo's: no worker of it may take a demo's jobs.
    const env = { DATABASE_URL: shared.url, TRAINSYNC_OWNER_DATABASE_URL: shared.ownerUrl, REDIS_URL, TRAINSYNC_QUEUE_PREFIX: given, TRAINSYNC_REQUESTS_PER_SECOND: '1000' };
    const runs = await Promise.all([runCli(['demo'], env), runCli(['demo'], env)]);
    const prefixes = runs.map((run) => /redis prefix: (\S+)/.exec(run.stdout)?.[1]);
    used.push(...prefixes.flatMap((p) => (p ? [p] : [])));
    for (const run of runs) {
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain('HR against the platform: 0 discrepancies');
      // Every action succeeded: none failed or was left queued behind the other demo.
      expect(run.stdout).toMatch(/│ disable\s+│ 3\s+│ 0\s+│ 0\s+│ 0\s+│ 0\s+│/);
      expect(run.stdout).toMatch(/replanning the same feed now: 0 actions/);
    }
    expect(prefixes[0]).toMatch(/^trainsync-demo-[0-9a-f]{8}$/);
    expect(prefixes[1]).toMatch(/^trainsync-demo-[0-9a-f]{8}$/);
    expect(prefixes[0]).not.toBe(prefixes[1]);
    for (const prefix of [...used, given]) expect(await keysUnder(prefix), prefix).toBe(0);
  });
});
