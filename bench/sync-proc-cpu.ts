import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

/**
 * CPU of the other processes a sync scenario runs on the same cores (Linux /proc; empty
 * elsewhere): the simulator child and this database's Postgres backends. Their CPU is not
 * the sync's, but on a 2-core machine it is part of what bounds the sync's wall time.
 */

const TICKS_PER_SECOND = 100;

/** User + system CPU of `pid` in µs, or undefined when it is gone or /proc is absent. */
export function processCpuMicros(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command.
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The pids of /proc whose stat and command line `accept` (empty without /proc). */
function pidsWhere(accept: (stat: string, cmdline: () => string) => boolean): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (accept(readFileSync(`/proc/${entry}/stat`, 'utf8'), () => readFileSync(`/proc/${entry}/cmdline`, 'utf8'))) pids.push(Number(entry));
    } catch {
      // Gone since the listing.
    }
  }
  return pids;
}

/** The pids whose parent is `parent` (the simulator child of this process). */
export function childPids(parent: number): number[] {
  return pidsWhere((stat) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent);
}

/** The local redis-server's pid (the benches' Redis, 127.0.0.1:6379: it names itself so in its command line). */
export function redisServerPid(): number | undefined {
  return pidsWhere((_stat, cmdline) => {
    const line = cmdline();
    return line.startsWith('redis-server') && line.includes(':6379');
  })[0];
}

/** CPU µs of each backend of database `name` (pg_stat_activity), by pid. */
export async function backendCpu(pool: pg.Pool, name: string): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name]);
  const out = new Map<number, number>();
  for (const { pid } of rows) {
    const micros = processCpuMicros(pid);
    if (micros !== undefined) out.set(pid, micros);
  }
  return out;
}

/** CPU the backends spent between two readings (backends new in `after` count whole). */
export function backendCpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let spent = 0;
  for (const [pid, micros] of after) spent += micros - (before.get(pid) ?? 0);
  return spent;
}

/**
 * Samples the CPU of database `name`'s backends every `everyMs` while a load runs, so a
 * backend that closes before the end (an idle pooled connection) still counts up to its
 * last sample. `stop()` returns the CPU µs they spent since `start()`.
 */
export class BackendCpuSampler {
  private before = new Map<number, number>();
  private latest = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: pg.Pool,
    private readonly name: string,
    private readonly everyMs = 200,
  ) {}

  async start(): Promise<void> {
    this.before = await backendCpu(this.pool, this.name);
    this.latest = new Map(this.before);
    this.timer = setInterval(() => {
      // A failed sample only loses that sample; the next (or the last, in stop) reads again.
      this.sampling = this.sample().catch(() => undefined);
    }, this.everyMs);
  }

  private async sample(): Promise<void> {
    for (const [pid, micros] of await backendCpu(this.pool, this.name)) this.latest.set(pid, micros);
  }

  async stop(): Promise<number> {
    clearInterval(this.timer);
    await this.sampling;
    await this.sample();
    return backendCpuSpent(this.before, this.latest);
  }
}

/** The simulator child of this process (its command line names the simulator's entry point). */
export function simulatorPid(): number | undefined {
  return childPids(process.pid).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('simulator/child.ts');
    } catch {
      return false;
    }
  });
}
