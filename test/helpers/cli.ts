import { spawn } from 'node:child_process';
import { ownerUrlOf } from './db.ts';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts `node bin/trainsync.js <args>` as a user would, with only `env` (and PATH), feeding `stdin`;
 * `output()` is what it said so far; `kill(signal)` signals it (Ctrl-C is SIGINT).
 */
export function startCli(args: readonly string[], env: Record<string, string>, stdin = ''): { done: Promise<CliRun>; output(): string; kill(signal: NodeJS.Signals): void } {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/trainsync.js'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const done = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  child.stdin.end(stdin);
  return { done, output: () => stdout + stderr, kill: (signal) => void child.kill(signal) };
}

/** Runs `node bin/trainsync.js <args>` as a user would, with only `env` (and PATH), feeding `stdin`. */
export function runCli(args: readonly string[], env: Record<string, string>, stdin = ''): Promise<CliRun> {
  return startCli(args, env, stdin).done;
}

/** The environment of a CLI child against a simulator, a test database and a BullMQ prefix of the test's own. */
export function cliEnv(parts: { sim: { url: string; apiKey: string }; databaseUrl: string; prefix: string; redisUrl: string }, more: Record<string, string> = {}): Record<string, string> {
  return { TRAINSYNC_API_URL: parts.sim.url, TRAINSYNC_API_KEY: parts.sim.apiKey, DATABASE_URL: parts.databaseUrl, TRAINSYNC_OWNER_DATABASE_URL: ownerUrlOf(parts.databaseUrl), REDIS_URL: parts.redisUrl, TRAINSYNC_QUEUE_PREFIX: parts.prefix, ...more };
}

/** A record of the line a person is told (stderrLine off a terminal): no field but these. */
const SAID_KEYS = new Set(['level', 'time', 'app', 'exitCode', 'msg']);

/**
 * stderr as a person is told it: off a terminal the reason said last (and commander's
 * messages) are JSON records like every other line there; here each is its `msg` again,
 * so a test reads `trainsync: …` as on a terminal. Other lines are left as they are.
 */
export function stderrSaid(stderr: string): string {
  return stderr
    .split('\n')
    .map((line) => {
      if (!line.startsWith('{')) return line;
      try {
        const record = JSON.parse(line) as Record<string, unknown>;
        return typeof record.msg === 'string' && Object.keys(record).every((key) => SAID_KEYS.has(key)) ? record.msg : line;
      } catch {
        return line;
      }
    })
    .join('\n');
}
