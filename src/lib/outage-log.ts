import type { Logger } from 'pino';

export interface OutageLogOptions {
  /** Where the service was looked for, e.g. `postgres://u:***@db:5432/x (DATABASE_URL)`; shown after "unreachable at". */
  target?: string;
  /** What happens meanwhile, e.g. "jobs wait and resume when it is back"; ends the warning. */
  consequence?: string;
  /** The clock, in milliseconds; default Date.now (tests pass their own). */
  now?: () => number;
}

/**
 * A dependency's outage as a state, logged twice: one warning when it starts and one
 * line when it ends, with its length, however many operations fail or retry
 * meanwhile. `down()` and `up()` may be called as often as convenient (on every
 * failure, after every success); only the transitions log.
 *
 * ```ts
 * const outage = new OutageLog('Postgres', log, { target: 'postgres://…/x (DATABASE_URL)', consequence: 'jobs wait and resume when it is back' });
 * outage.down('connection refused');   // warn: Postgres unreachable at postgres://…/x (DATABASE_URL): connection refused; jobs wait …
 * outage.down('connection refused');   // nothing
 * outage.up();                          // info: Postgres is back after 12.3 s
 * ```
 */
export class OutageLog {
  readonly service: string;
  private readonly log: Logger;
  private readonly options: OutageLogOptions;
  private readonly now: () => number;
  private since: number | undefined;

  constructor(service: string, log: Logger, options: OutageLogOptions = {}) {
    this.service = service;
    this.log = log;
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /** True between a `down()` and the next `up()`. */
  get isDown(): boolean {
    return this.since !== undefined;
  }

  /** When the outage began (epoch milliseconds), or undefined while the service is up. */
  get downSince(): number | undefined {
    return this.since;
  }

  /** Records a failure; warns only when this starts an outage. Returns true when it did. */
  down(reason: string): boolean {
    if (this.since !== undefined) return false;
    this.since = this.now();
    const { target, consequence } = this.options;
    const where = target ? ` at ${target}` : '';
    this.log.warn({ service: this.service, reason }, `${this.service} unreachable${where}: ${reason}${consequence ? `; ${consequence}` : ''}`);
    return true;
  }

  /** Records a success; logs only when this ends an outage, with its length. Returns true when it did. */
  up(): boolean {
    if (this.since === undefined) return false;
    const seconds = Math.max(0, this.now() - this.since) / 1000;
    this.since = undefined;
    this.log.info({ service: this.service, seconds: Math.round(seconds * 10) / 10 }, `${this.service} is back after ${seconds.toFixed(1)} s`);
    return true;
  }
}
