import type { Job } from 'bullmq';
import type { Config } from '../config.ts';
import { maskUrl, toInfrastructureError, type InfrastructureError } from '../lib/infra-errors.ts';
import type { Logger } from 'pino';
import { OutageLog } from '../lib/outage-log.ts';
import type { PgLender } from '../warehouse/transaction.ts';

/** A job that met a Postgres outage waits 1 s, 2 s, 4 s … while the outage lasts, at most this long. */
export const POSTGRES_WAIT_FIRST_MS = 1_000;
const POSTGRES_WAIT_MAX_MS = 30_000;
/** While Postgres is down, `select 1` this often, to log its return and release the waiting jobs at once. */
const POSTGRES_PROBE_MS = 1_000;

/**
 * One process's view of a Postgres outage, as its jobs meet it: logged once when it
 * starts and once when it ends; jobs put back delayed, 1 s, 2 s, 4 s … (at most 30 s)
 * while it lasts, without spending a BullMQ attempt; and a `select 1` every second
 * meanwhile, which ends it and releases the waiting jobs as soon as Postgres answers.
 */
export class PostgresWait {
  readonly outage: OutageLog;
  private readonly config: Pick<Config, 'DATABASE_URL' | 'REDIS_URL'>;
  private delaysGiven = 0;
  /** When the last outage ended: an attempt begun before it failed of that outage, not a new one. */
  private recoveredAt = 0;
  private probing = false;
  private readonly waiting = new Map<string, Job>();

  constructor(config: Pick<Config, 'DATABASE_URL' | 'REDIS_URL'>, log: Logger) {
    this.config = config;
    this.outage = new OutageLog('Postgres', log, {
      target: `${maskUrl(config.DATABASE_URL)} (DATABASE_URL)`,
      consequence: 'jobs wait and resume when it is back',
    });
  }

  /** Postgres failed an attempt begun at `attemptStartedAt`; returns how long its job waits. */
  failed(error: InfrastructureError, attemptStartedAt: number, lend: PgLender): number {
    if (attemptStartedAt >= this.recoveredAt) this.outage.down(reasonOf(error));
    // A straggler of an outage already over retries soon: Postgres answered the probe.
    if (!this.outage.isDown) return POSTGRES_WAIT_FIRST_MS;
    this.probe(lend);
    const delay = Math.min(POSTGRES_WAIT_MAX_MS, POSTGRES_WAIT_FIRST_MS * 2 ** this.delaysGiven);
    this.delaysGiven += 1;
    return delay;
  }

  /** The job waits in the delayed set until its delay ends or Postgres is back, whichever is first. */
  parked(job: Job): void {
    if (job.id !== undefined) this.waiting.set(job.id, job);
  }

  started(job: Job): void {
    if (job.id !== undefined) this.waiting.delete(job.id);
  }

  private probe(lend: PgLender): void {
    if (this.probing) return;
    this.probing = true;
    const tick = async (): Promise<void> => {
      try {
        await lend((client) => client.query('select 1'));
      } catch (error) {
        // Another failure (the pool was closed: the process is stopping) ends the probing.
        if (toInfrastructureError(error, this.config, 'postgres')) setTimeout(() => void tick(), POSTGRES_PROBE_MS).unref();
        else this.probing = false;
        return;
      }
      this.probing = false;
      this.recovered();
    };
    setTimeout(() => void tick(), POSTGRES_PROBE_MS).unref();
  }

  private recovered(): void {
    this.outage.up();
    this.delaysGiven = 0;
    this.recoveredAt = Date.now();
    const jobs = [...this.waiting.values()];
    this.waiting.clear();
    // Their delay may have ended meanwhile (then they are no longer delayed): nothing to do.
    for (const job of jobs) job.promote().catch(() => undefined);
  }
}

/** Per runner, which is per process: every job of the process shares one outage. */
const postgresWaits = new WeakMap<object, PostgresWait>();

export function postgresWaitOf(runner: { log: Logger }, config: Config): PostgresWait {
  let wait = postgresWaits.get(runner);
  if (!wait) {
    wait = new PostgresWait(config, runner.log);
    postgresWaits.set(runner, wait);
  }
  return wait;
}

/** "cannot connect to Postgres at URL (DATABASE_URL): why" → "why": the outage line names the URL itself. */
function reasonOf(error: InfrastructureError): string {
  return error.message.replace(/^cannot connect to \S+ at .*? \((DATABASE_URL|REDIS_URL)\): /, '');
}
