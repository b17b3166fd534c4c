/**
 * REDIS_URL's three forms as src/config.ts reads them, the hash-tagged prefix, and what
 * a person reads when the sentinels or the Cluster cannot be reached: one line naming
 * REDIS_URL, password masked. Real sockets on loopback ports nothing listens on.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { maskUrl } from '../src/lib/infra-errors.ts';
import { RedisConnections } from '../src/queue/connection.ts';
import { clusterSafePrefix, hasHashTag, parseRedisUrl } from '../src/lib/redis-target.ts';
import { capturingLogger } from './helpers/log-capture.ts';
import { freePort } from './helpers/own-services.ts';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('REDIS_URL forms', () => {
  it('reads a single server as before, a sentinel set-up and a Cluster', () => {
    expect(parseRedisUrl('redis://:pw@127.0.0.1:6379/2')).toEqual({ kind: 'single', url: 'redis://:pw@127.0.0.1:6379/2' });
    expect(parseRedisUrl('redis+sentinel://app:p%40ss@s1:26379,s2,[::1]:26380/mymaster/3?sentinelPassword=sp')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'mymaster',
      db: 3,
      tls: false,
      username: 'app',
      password: 'p@ss',
      sentinelPassword: 'sp',
    });
    expect(parseRedisUrl('rediss+cluster://:pw@n1:7000,n2:7001,n3')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'n1', port: 7000 },
        { host: 'n2', port: 7001 },
        { host: 'n3', port: 6379 },
      ],
      tls: true,
      password: 'pw',
    });
  });

  it('refuses a bad URL naming REDIS_URL, what is wrong and an example, never echoing the password', () => {
    const cases: Array<[string, RegExp]> = [
      ['localhost:6379', /expected a Redis URL, e\.g\. redis:\/\/127\.0\.0\.1:6379, redis\+sentinel:\/\/.* or redis\+cluster:\/\//],
      ['redis+sentinel://:s3cret@s1:26379', /expected the master's name after the sentinels .*e\.g\. redis\+sentinel:\/\/:PASSWORD@sentinel1:26379,sentinel2:26379\/mymaster/],
      ['redis+sentinel://:s3cret@s1:26379,/mymaster', /expected sentinels as host:port separated by commas \(an empty host\)/],
      ['redis+cluster://:s3cret@n1:7000,n2:99999', /expected seed nodes as host:port separated by commas \(port 99999 is out of range\), e\.g\. redis\+cluster:\/\//],
      ['redis+cluster://:s3cret@n1:7000/0', /expected no path after the seed nodes/],
      ['redis+cluser://n1:7000', /expected redis\+sentinel:\/\/HOSTS\/MASTER or redis\+cluster:\/\/HOSTS/],
    ];
    for (const [url, expected] of cases) {
      const problems = problemsOf({ REDIS_URL: url });
      expect(problems, url).toHaveLength(1);
      expect(problems[0], url).toMatch(/^REDIS_URL: got "/);
      expect(problems[0], url).toMatch(expected);
      expect(problems[0], url).not.toContain('s3cret');
    }
  });

  it('puts the prefix in a hash tag on a Cluster only, and keeps a tag already there', () => {
    expect(clusterSafePrefix('trainsync', 'redis+cluster://n1:7000')).toBe('{trainsync}');
    expect(clusterSafePrefix('acme:{jobs}', 'redis+cluster://n1:7000')).toBe('acme:{jobs}');
    // "{}" is no tag to Redis (nothing between the braces): tagged as a whole.
    expect(clusterSafePrefix('a{}b', 'rediss+cluster://n1:7000')).toBe('{a{}b}');
    expect(clusterSafePrefix('trainsync', 'redis://127.0.0.1:6379')).toBe('trainsync');
    expect(clusterSafePrefix('trainsync', 'redis+sentinel://s1/mymaster')).toBe('trainsync');
    expect(hasHashTag('{x}')).toBe(true);
    expect(hasHashTag('}x{')).toBe(false);
    expect(loadConfig({ REDIS_URL: 'redis+cluster://n1:7000' }).TRAINSYNC_QUEUE_PREFIX).toBe('{trainsync}');
    expect(loadConfig({}).TRAINSYNC_QUEUE_PREFIX).toBe('trainsync');
  });

  it('masks passwords in several-host URLs', () => {
    expect(maskUrl('redis+cluster://user:p,w@h1:7000,h2:7001')).toBe('redis+cluster://user:***@h1:7000,h2:7001');
    expect(maskUrl('redis+sentinel://h1,h2/m?sentinelPassword=abc')).toBe('redis+sentinel://h1,h2/m?sentinelPassword=***');
    // An unencoded "/" in the password: nothing past the scheme is shown.
    expect(maskUrl('redis+sentinel://:pa/ss@h1,h2/m')).not.toContain('pa/ss');
  });
});

describe('unreachable sentinels or Cluster', () => {
  it('a one-shot command gives up with one line naming REDIS_URL, password masked', async () => {
    const [a, b] = [await freePort(), await freePort()];
    for (const [url, says] of [
      [`redis+sentinel://:s3cret@127.0.0.1:${a},127.0.0.1:${b}/mymaster`, /no sentinel answered; are the sentinels up/],
      [`redis+cluster://:s3cret@127.0.0.1:${a},127.0.0.1:${b}`, /no node of the Cluster answered; are the nodes up/],
    ] as const) {
      const { log, lines } = capturingLogger('debug');
      const redis = new RedisConnections({ url, mode: 'one-shot', timeoutMs: 1_500, log });
      try {
        const error = await redis.check(10_000).then(
          () => undefined,
          (e: unknown) => e as Error,
        );
        expect(error?.message, url).toMatch(new RegExp(`^cannot connect to Redis at ${maskUrl(url).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(REDIS_URL\\): `));
        expect(error?.message, url).toMatch(says);
        expect(error?.message).not.toContain('s3cret');
        expect(lines.join('')).not.toContain('s3cret');
        // The outage is one line, however many connections and retries.
        expect(lines.filter((line) => line.includes('Redis unreachable')).length, lines.join('')).toBeLessThanOrEqual(1);
      } finally {
        redis.close();
      }
    }
  });

  it('the worker (persistent) logs an outage of every sentinel or Cluster node once, however many retries', async () => {
    const [a, b] = [await freePort(), await freePort()];
    for (const url of [`redis+sentinel://:s3cret@127.0.0.1:${a},127.0.0.1:${b}/mymaster`, `redis+cluster://:s3cret@127.0.0.1:${a},127.0.0.1:${b}`]) {
      const { log, lines } = capturingLogger('info');
      const redis = new RedisConnections({ url, mode: 'persistent', timeoutMs: 1_000, log });
      const copy = redis.open();
      try {
        // Several rounds of retries (100 ms doubling) on two connections.
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        expect(redis.isDown, url).toBe(true);
        const outage = lines.filter((line) => line.includes('Redis unreachable'));
        expect(outage, lines.join('')).toHaveLength(1);
        expect(outage[0]).toContain(maskUrl(url));
        expect(lines.join('')).not.toContain('s3cret');
        expect(lines.join('')).not.toMatch(/"Redis connection error"/);
      } finally {
        copy.disconnect();
        redis.close();
      }
    }
  });
});
