import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointLines } from '../src/commands/options/worker-endpoints.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { renderScreen } from './helpers/screen.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('the endpoint lines of `trainsync worker`', () => {
  it('one line per endpoint with its URL: health and metrics always; webhooks, SCIM and the console when on', () => {
    expect(endpointLines({ health: { port: 9464, host: '127.0.0.1' } })).toEqual(['health    http://127.0.0.1:9464/healthz', 'metrics   http://127.0.0.1:9464/metrics']);
    expect(endpointLines({ health: { port: 9464, host: '0.0.0.0' } })).toEqual(['health    http://127.0.0.1:9464/healthz  (all interfaces)', 'metrics   http://127.0.0.1:9464/metrics  (all interfaces)']);
    expect(
      endpointLines({
        health: { port: 9464, host: '127.0.0.1' },
        webhooks: { port: 9465, host: '0.0.0.0', orgs: ['default'] },
        scim: { port: 9466, host: '10.0.0.5', orgs: ['north', 'south'] },
        console: { port: 9467, host: '127.0.0.1' },
      }).slice(2),
    ).toEqual([
      'webhooks  POST http://127.0.0.1:9465/webhooks/platform  (all interfaces)',
      'SCIM      http://10.0.0.5:9466/scim/v2/north, /scim/v2/south',
      'console   http://127.0.0.1:9467/',
    ]);
    expect(endpointLines({ health: { port: 1, host: '127.0.0.1' }, console: { port: 2, host: '::1' } }).at(-1)).toBe('console   http://[::1]:2/');
  });
});

describe('trainsync worker prints its endpoints', () => {
  let database: TestDatabase;
  const prefix = testPrefix();
  const env = (): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_API_URL: 'http://127.0.0.1:9',
    TRAINSYNC_API_KEY: 'unused',
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_WEBHOOK_SECRET: Buffer.alloc(32, 3).toString('base64'),
    TRAINSYNC_WEBHOOK_PORT: '0',
    TRAINSYNC_SCIM_TOKEN: 's'.repeat(32),
    TRAINSYNC_SCIM_PORT: '0',
  });

  /** Starts `command` (argv), waits until its output (stdout and stderr) has every pattern, stops it with SIGTERM. */
  function runUntil(command: string, args: string[], patterns: RegExp[]): Promise<{ stdout: string; stderr: string; code: number | null }> {
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let stopped = false;
      const check = (): void => {
        if (!stopped && patterns.every((p) => p.test(stdout + stderr))) {
          stopped = true;
          child.kill('SIGTERM');
        }
      };
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => ((stdout += chunk), check()));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => ((stderr += chunk), check()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ stdout, stderr, code }));
    });
  }

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
    await dropPrefix(prefix);
  });

  it('piped, with --print-endpoints: the lines on stdout, stderr still JSON lines only; every endpoint on loopback by default', async () => {
    const run = await runUntil(process.execPath, [path.join(ROOT, 'bin/trainsync.js'), 'worker', '--no-schedules', '--print-endpoints'], [/^SCIM /m, /"msg":"worker started"/]);
    // No *_HOST set: nothing listens on every interface (no line says "all interfaces").
    expect(run.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^health {4}http:\/\/127\.0\.0\.1:\d+\/healthz$/),
      expect.stringMatching(/^metrics {3}http:\/\/127\.0\.0\.1:\d+\/metrics$/),
      expect.stringMatching(/^webhooks {2}POST http:\/\/127\.0\.0\.1:\d+\/webhooks\/platform$/),
      expect.stringMatching(/^SCIM {6}http:\/\/127\.0\.0\.1:\d+\/scim\/v2$/),
    ]);
    // The URL is where it answers: the port printed is the one it listens on, and the address the one bound.
    const health = /^health {4}(\S+)/m.exec(run.stdout)![1]!;
    const serving = /"port":(\d+),"host":"([^"]+)","token":false,"msg":"serving \/healthz and \/metrics"/.exec(run.stderr);
    expect(serving?.[2]).toBe('127.0.0.1');
    expect(health).toBe(`http://127.0.0.1:${serving?.[1]}/healthz`);
    expect(/"host":"([^"]+)"[^\n]*"msg":"webhook receiver listening"/.exec(run.stderr)?.[1]).toBe('127.0.0.1');
    expect(/"host":"([^"]+)"[^\n]*"msg":"SCIM endpoint listening"/.exec(run.stderr)?.[1]).toBe('127.0.0.1');
    for (const line of run.stderr.trim().split('\n')) expect(() => JSON.parse(line), line).not.toThrow();
  });

  it('on a terminal, without the option: the same lines', async () => {
    const quote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;
    const command = `stty cols 100 rows 40; exec ${quote(process.execPath)} ${quote(path.join(ROOT, 'bin/trainsync.js'))} worker --no-schedules`;
    // util-linux `script` gives the worker a pseudo-terminal; SIGTERM to it reaches the worker.
    const run = await runUntil('script', ['-qfec', command, '/dev/null'], [/SCIM {6}http/]);
    const screen = renderScreen(run.stdout);
    expect(screen.filter((line) => /^(health|metrics|webhooks|SCIM) /.test(line))).toHaveLength(4);
    expect(screen).toContainEqual(expect.stringMatching(/^health {4}http:\/\/127\.0\.0\.1:\d+\/healthz/));
  });
});
