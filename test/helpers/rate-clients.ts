import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Platform-client processes on one shared request budget (test/fixtures/rate-client.ts),
 * for the budget test and `npm run bench -- timings`.
 */

export interface RateClientOptions {
  apiUrl: string;
  apiKey: string;
  redisUrl: string;
  keyPrefix: string;
  requestsPerSecond: number;
  /** Requests this process makes, over `concurrency` loops. */
  count: number;
  concurrency: number;
}

export interface RateClientSummary {
  done: number;
  /** Epoch ms when the process began its requests and when it finished them. */
  startedAt: number;
  endedAt: number;
  /** The budget's debug lines of the grants this process got (helpers/budget-grants.ts reads them). */
  grantLines: string[];
  code: number | null;
  output: string;
}

interface RateClient {
  ready: Promise<void>;
  go(): void;
  summary: Promise<RateClientSummary>;
}

function startRateClient(options: RateClientOptions): RateClient {
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
  const summary = new Promise<RateClientSummary>((resolve) => {
    child.on('exit', (code) => {
      const last = stdout.trim().split('\n').at(-1) ?? '{}';
      let parsed: { done?: number; startedAt?: number; endedAt?: number; grantLines?: string[] } = {};
      try {
        parsed = JSON.parse(last) as typeof parsed;
      } catch {
        // Reported through `output` below.
      }
      resolve({ done: parsed.done ?? -1, startedAt: parsed.startedAt ?? Number.NaN, endedAt: parsed.endedAt ?? Number.NaN, grantLines: parsed.grantLines ?? [], code, output: stdout + stderr });
    });
  });
  return { ready, go: () => child.stdin.write('go\n'), summary };
}

/** `count` processes on one budget, released together once all are ready; their summaries. */
export async function runRateClients(count: number, options: RateClientOptions): Promise<RateClientSummary[]> {
  const children = Array.from({ length: count }, () => startRateClient(options));
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.go();
  return Promise.all(children.map((c) => c.summary));
}
