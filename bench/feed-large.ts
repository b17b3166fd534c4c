/**
 * A 300,000-row HR feed (50 MB of CSV, the columns of examples/hr-feed.csv) through
 * `trainsync feed check` and `trainsync provision --dry-run` (against the simulator in a
 * child process, a database of the bench's own), each a child process whose peak RSS
 * (/usr/bin/time -v, else VmHWM from /proc), wall and CPU time are measured. Target: peak
 * RSS ≤ 300 MB for each. The simulator has 20 accounts and 50 free seats, so the dry run
 * also shows the seats line said first.
 * Run: node bin/run-ts.js bench/feed-large.ts [rows]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchDatabase } from './admin-query.ts';
import { writeFeedFile } from './feed-file.ts';
import { startSimulatorChild } from './simulator-child.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TIME = '/usr/bin/time';

export interface CommandFigures {
  exitCode: number | null;
  peakRssMb: number;
  wallSeconds: number;
  cpuSeconds: number;
  /** How peak RSS was read. */
  rssSource: 'time -v' | 'VmHWM';
  firstLine: string;
}

function seconds(text: string, label: string): number {
  const m = new RegExp(`${label}: ([\\d.:]+)`).exec(text);
  if (!m) return Number.NaN;
  // "Elapsed (wall clock) time (h:mm:ss or m:ss): 1:40.55"
  return m[1]!.split(':').reduce((total, part) => total * 60 + Number(part), 0);
}

/** Runs `trainsync ARGS` and measures it; stdout is kept for its first line only. */
function measure(args: string[], env: Record<string, string>): Promise<CommandFigures> {
  const useTime = existsSync(TIME);
  const command = useTime ? TIME : process.execPath;
  const argv = [...(useTime ? ['-v', process.execPath] : []), path.join(ROOT, 'bin/trainsync.js'), ...args];
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let hwmKb = 0;
    child.stdout.setEncoding('utf8').on('data', (c: string) => void (stdout.length < 65_536 && (stdout += c)));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    // Without time(1): the child's high-water mark, read while it runs.
    const poll = useTime
      ? undefined
      : setInterval(() => {
          readFile(`/proc/${child.pid}/status`, 'utf8')
            .then((s) => (hwmKb = Math.max(hwmKb, Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0))))
            .catch(() => undefined);
        }, 100);
    child.on('error', reject);
    child.on('close', (code) => {
      if (poll) clearInterval(poll);
      const wall = Number(process.hrtime.bigint() - started) / 1e9;
      const firstLine = stdout.split('\n')[0] ?? '';
      if (useTime) {
        const rss = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1] ?? Number.NaN);
        const exit = Number(/Exit status: (\d+)/.exec(stderr)?.[1] ?? code);
        resolve({
          exitCode: exit,
          peakRssMb: Math.round(rss / 1024),
          wallSeconds: Math.round(seconds(stderr, 'Elapsed \\(wall clock\\) time \\(h:mm:ss or m:ss\\)') * 10) / 10,
          cpuSeconds: Math.round((seconds(stderr, 'User time \\(seconds\\)') + seconds(stderr, 'System time \\(seconds\\)')) * 10) / 10,
          rssSource: 'time -v',
          firstLine,
        });
      } else {
        resolve({ exitCode: code, peakRssMb: Math.round(hwmKb / 1024), wallSeconds: Math.round(wall * 10) / 10, cpuSeconds: Number.NaN, rssSource: 'VmHWM', firstLine });
      }
    });
  });
}

export interface FeedLargeBench {
  rows: number;
  fileMb: number;
  loadAverage: number[];
  feedCheck: CommandFigures;
  dryRun: CommandFigures;
  targetRssMb: number;
}

export async function benchFeedLarge(rows = 300_000): Promise<FeedLargeBench> {
  const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-bench-feed-'));
  const database = await createBenchDatabase();
  const sim = await startSimulatorChild({ seed: 300, sizes: { users: 20, groups: 2, courses: 1, results: 1 } });
  try {
    const file = path.join(dir, 'hr.csv');
    await writeFeedFile(file, rows);
    const env = {
      TRAINSYNC_API_URL: sim.url,
      TRAINSYNC_API_KEY: sim.apiKey,
      DATABASE_URL: database.url,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      TRAINSYNC_QUEUE_PREFIX: `bench-feed-${randomBytes(4).toString('hex')}`,
      TRAINSYNC_REQUESTS_PER_SECOND: '500',
      LOG_LEVEL: 'warn',
    };
    const feedCheck = await measure(['feed', 'check', file, '--rows', '3'], env);
    const dryRun = await measure(['provision', file, '--dry-run'], env);
    return { rows, fileMb: Math.round((await stat(file)).size / 1048576), loadAverage: loadavg().map((n) => Math.round(n * 10) / 10), feedCheck, dryRun, targetRssMb: 300 };
  } finally {
    sim.stop();
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const rows = process.argv[2] ? Number.parseInt(process.argv[2], 10) : 300_000;
  process.stdout.write(`${JSON.stringify(await benchFeedLarge(rows))}\n`);
}
