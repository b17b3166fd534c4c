import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/** `trainsync doctor` with two organisations: each one's platform on its own lines, `--org` narrows them. */
describe('trainsync doctor, several organisations', () => {
  let simA: RunningSimulator;
  let simB: RunningSimulator;
  let database: TestDatabase;
  let dir: string;
  const prefix = testPrefix();
  const env = (bKey: string): Record<string, string> => ({
    TRAINSYNC_ORGS_FILE: path.join(dir, 'orgs.json'),
    A_KEY: simA.apiKey,
    B_KEY: bKey,
    A_HOOK: randomBytes(32).toString('base64'),
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_WEBHOOK_PORT: '0',
    TRAINSYNC_SECRET_KEY: 'a'.repeat(64),
  });
  const lines = (stdout: string, check: string): string[] => stdout.split('\n').filter((l) => new RegExp(`^(ok|warn|FAIL)\\s+${check}\\s{2,}`).test(l));

  beforeAll(async () => {
    simA = await startSimulator({ seed: 21, apiKey: 'key-of-a-0123456789' });
    simB = await startSimulator({ seed: 22, apiKey: 'key-of-b-0123456789' });
    database = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'trainsync-orgs-doctor-'));
    writeFileSync(
      path.join(dir, 'orgs.json'),
      JSON.stringify({
        organisations: [
          { slug: 'north', name: 'North', apiUrl: simA.url, apiKey: { env: 'A_KEY' }, webhookSecret: { env: 'A_HOOK' } },
          { slug: 'south', name: 'South', apiUrl: simB.url, apiKey: { env: 'B_KEY' } },
        ],
      }),
    );
  });
  afterAll(async () => {
    await simA?.close();
    await simB?.close();
    await database?.drop();
    await dropPrefix(prefix);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('checks the platform of every organisation by default, each line naming its slug; webhooks name the paths', async () => {
    const run = await runCli(['doctor'], env(simB.apiKey));
    expect(run.stdout).not.toMatch(/^FAIL/m);
    const platform = lines(run.stdout, 'platform');
    expect(platform).toHaveLength(2);
    expect(platform[0]).toMatch(new RegExp(`^ok\\s+platform\\s+\\[north\\] ${simA.url} accepted the key`));
    expect(platform[1]).toMatch(new RegExp(`^ok\\s+platform\\s+\\[south\\] ${simB.url} accepted the key`));
    expect(lines(run.stdout, 'platform seats').map((l) => /\[(\w+)\]/.exec(l)?.[1])).toEqual(['north', 'south']);
    expect(lines(run.stdout, 'webhooks')[0]).toMatch(/POST \/webhooks\/platform\/north; no secret, so no webhooks: south/);
  });

  it('--org names one; a key one organisation refuses fails that organisation only (exit 2), --json carries org', async () => {
    const only = await runCli(['doctor', '--org', 'north'], env('wrong-key-0123456789'));
    expect(only.code, only.stderr).toBe(0);
    expect(lines(only.stdout, 'platform')).toHaveLength(1);
    expect(only.stdout).not.toContain('[south]');
    const all = await runCli(['doctor', '--json'], env('wrong-key-0123456789'));
    expect(all.code).toBe(2);
    const checks = JSON.parse(all.stdout) as Array<{ check: string; level: string; org?: string; fix?: string }>;
    const platform = checks.filter((c) => c.check === 'platform');
    expect(platform.map((c) => [c.org, c.level])).toEqual([
      ['north', 'ok'],
      ['south', 'fail'],
    ]);
    expect(platform[1]!.fix).toContain('the apiKey of organisation south');
  });

  it('--org with an unknown slug is a usage error naming the choices', async () => {
    const run = await runCli(['doctor', '--org', 'east'], env(simB.apiKey));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--org east: no such organisation; configured: north, south/);
  });
});
