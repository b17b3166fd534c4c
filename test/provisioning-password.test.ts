import { scopedApp } from '../src/commands/options/scoped.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestPasswordChange } from '../src/provisioning/apply/password-request.ts';
import { userAccount } from '../src/simulator/index.ts';
import { runCli } from './helpers/cli.ts';
import { REDIS_URL } from './helpers/redis.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

let h: SyncHarness;

beforeAll(async () => {
  h = await createSyncHarness({
    simulator: { seed: 9, sizes: { users: 40, groups: 2, courses: 3, results: 5 } },
    env: { TRAINSYNC_SECRET_KEY: randomBytes(32).toString('hex'), LOG_LEVEL: 'trace' },
  });
});
afterAll(async () => {
  await h?.close();
});

/** Every text column of every table of both schemas, as one string. */
async function databaseText(): Promise<string> {
  const { rows: tables } = await h.database.pool.query<{ name: string }>(
    `select format('%I.%I', table_schema, table_name) as name from information_schema.tables
     where table_schema in ('trainsync', 'training', 'public') and table_type = 'BASE TABLE'`,
  );
  let text = '';
  for (const { name } of tables) {
    const { rows } = await h.database.pool.query<{ t: string }>(`select t::text as t from ${name} t`);
    text += rows.map((r) => r.t).join('\n');
  }
  return text;
}

/** Every value of every Redis key this test's processes wrote (queue and request budget). */
async function redisText(prefix: string): Promise<{ keys: number; text: string }> {
  const redis = new Redis(REDIS_URL);
  try {
    let text = '';
    let keys = 0;
    for (const pattern of [`${prefix}*`]) {
      for await (const batch of redis.scanStream({ match: pattern, count: 500 }) as AsyncIterable<string[]>) {
        for (const key of batch) {
          keys += 1;
          const type = await redis.type(key);
          const value =
            type === 'string' ? await redis.get(key)
            : type === 'hash' ? JSON.stringify(await redis.hgetall(key))
            : type === 'list' ? (await redis.lrange(key, 0, -1)).join('\n')
            : type === 'set' ? (await redis.smembers(key)).join('\n')
            : type === 'zset' ? (await redis.zrange(key, 0, -1)).join('\n')
            : type === 'stream' ? JSON.stringify(await redis.xrange(key, '-', '+'))
            : '';
          text += `${key}\n${value}\n`;
        }
      }
    }
    return { keys, text };
  } finally {
    redis.disconnect();
  }
}

describe('passwords', () => {
  const strong = `Pw-${randomUUID()}-7`;
  const weak = `weakpassword${randomUUID().replace(/[\d-]/g, '')}`;
  const piped = `Piped-${randomUUID()}-3`;
  let generated = '';

  it('sets a password through the queue; the platform records one change', async () => {
    const target = h.sim.state.users.find((u) => u.accountType === 'API')!;
    const row = await requestPasswordChange(scopedApp(h.app, DEFAULT_ORG), target.email, strong);
    expect(row).toMatchObject({ kind: 'set-password', status: 'succeeded', attempts: 1 });
    expect(userAccount(h.sim.state, target.id)).toMatchObject({ passwordSet: true, passwordChanges: 1 });
  });

  it('a weak password fails at once with INVALID_PASSWORD; an SSO account with INVALID_USER_TYPE', async () => {
    const api = h.sim.state.users.filter((u) => u.accountType === 'API')[1]!;
    const weakRow = await requestPasswordChange(scopedApp(h.app, DEFAULT_ORG), api.email, weak);
    expect(weakRow).toMatchObject({ status: 'failed', errorCode: 'INVALID_PASSWORD', attempts: 1 });
    expect(userAccount(h.sim.state, api.id).passwordChanges).toBe(0);
    const sso = h.sim.state.users.find((u) => u.accountType === 'SSO')!;
    const ssoRow = await requestPasswordChange(scopedApp(h.app, DEFAULT_ORG), sso.email, strong);
    expect(ssoRow).toMatchObject({ status: 'failed', errorCode: 'INVALID_USER_TYPE' });
  });

  it('`trainsync password` reads standard input (one trailing newline dropped) or generates one', async () => {
    const target = h.sim.state.users.filter((u) => u.accountType === 'API')[2]!;
    const viaStdin = await runCli(['password', target.email], h.env, `${piped}\n`);
    expect(viaStdin.stderr).not.toContain(piped);
    expect(viaStdin).toMatchObject({ code: 0, stdout: `password set for ${target.email}\n` });
    expect(userAccount(h.sim.state, target.id).passwordChanges).toBe(1);

    const viaGenerate = await runCli(['password', target.email, '--generate'], h.env);
    expect(viaGenerate.code).toBe(0);
    generated = viaGenerate.stdout.trim().split('\n').pop()!;
    expect(generated).toMatch(/^\S{20}$/);
    expect(viaGenerate.stderr).not.toContain(generated);
    expect(userAccount(h.sim.state, target.id).passwordChanges).toBe(2);

    const refused = await runCli(['password', target.email], { ...h.env, TRAINSYNC_SECRET_KEY: '' }, `${piped}\n`);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/TRAINSYNC_SECRET_KEY: missing/);
  });

  it('no password reaches the logs, Postgres or Redis in plain text', async () => {
    const secrets = [strong, weak, piped, generated];
    const logs = h.logLines.join('');
    expect(logs.length).toBeGreaterThan(1000);
    const db = await databaseText();
    expect(db).toContain('set-password');
    const redis = await redisText(h.prefix);
    expect(redis.keys).toBeGreaterThan(5);
    // The queued jobs are there (the search looked where the password travels), and hold no secret at all:
    // not even encrypted (bull-board shows job data); the encrypted copies kept under their own keys are gone once used.
    expect(redis.text).toContain('set-password');
    expect(redis.text).not.toMatch(/v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\./);
    expect(redis.text).not.toMatch(/:secret:/);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(10);
      expect(logs).not.toContain(secret);
      expect(db).not.toContain(secret);
      expect(redis.text).not.toContain(secret);
    }
  });
});
