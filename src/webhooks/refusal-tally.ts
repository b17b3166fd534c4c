import type { Logger } from '../runtime/log.ts';
import type { OrgScope } from '../warehouse/scope.ts';
import { addRefusalCounts, type RefusalCount, type SignatureRefusalReason } from './refusals.ts';

/**
 * Signature refusals, counted in memory and written as per-minute sums. A delivery with
 * a missing or invalid signature can come from anyone on the network: writing a row for
 * each let a sender grow the database at its own pace (2,000 rows in under 3 seconds).
 * Now a refusal costs a map update; every FLUSH_MS the counts go to
 * trainsync.webhook_refusal_counts, one row per organisation, reason and minute at most.
 */

/** How often the counts are written. */
export const REFUSAL_FLUSH_MS = 5_000;
/** Minutes of counts kept in memory while the database cannot take them; older ones are dropped (the metric still has them). */
const KEPT_WHILE_DOWN = 60;

export interface RefusalTally {
  /** Counts one refusal of the organisation of `scope`, whose path was posted to (no I/O). */
  note(scope: OrgScope, reason: SignatureRefusalReason, header: string, remote: string | undefined): void;
  /** Writes what is counted so far. Never throws: a failure is logged and the counts wait for the next flush. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

/** A count in memory, with the handle of the organisation it is of. */
interface Counted {
  scope: OrgScope;
  count: RefusalCount;
}

export function startRefusalTally(deps: { log: Logger }, flushMs = REFUSAL_FLUSH_MS): RefusalTally {
  let pending = new Map<string, Counted>();
  let flushing: Promise<void> = Promise.resolve();

  const merge = (scope: OrgScope, count: RefusalCount): void => {
    const key = `${scope.org}\u0000${count.reason}\u0000${count.minute.getTime()}`;
    const known = pending.get(key);
    if (known) {
      known.count.refusals += count.refusals;
      known.count.lastRemote = count.lastRemote ?? known.count.lastRemote;
    } else pending.set(key, { scope, count: { ...count } });
  };

  const write = async (): Promise<void> => {
    if (pending.size === 0) return;
    const batch = [...pending.values()];
    pending = new Map();
    const byOrg = new Map<string, { scope: OrgScope; counts: RefusalCount[] }>();
    for (const { scope, count } of batch) {
      const of = byOrg.get(scope.org) ?? { scope, counts: [] };
      of.counts.push(count);
      byOrg.set(scope.org, of);
    }
    for (const { scope, counts } of byOrg.values()) {
      try {
        await addRefusalCounts(scope, counts);
      } catch (error) {
        // Kept for the next flush, within bounds: a flood during an outage cannot grow memory.
        const oldest = Date.now() - KEPT_WHILE_DOWN * 60_000;
        for (const c of counts) if (c.minute.getTime() >= oldest) merge(scope, c);
        deps.log.warn({ err: error, org: scope.org, refusals: counts.reduce((n, c) => n + c.refusals, 0) }, 'could not record the count of refused webhook deliveries; retried at the next flush');
      }
    }
  };

  const flush = (): Promise<void> => {
    // One write at a time, in order.
    flushing = flushing.then(write, write);
    return flushing;
  };

  const timer = setInterval(() => void flush(), flushMs);
  timer.unref();

  return {
    note(scope, reason, header, remote) {
      const now = new Date();
      merge(scope, { reason, header, lastRemote: remote, refusals: 1, minute: new Date(now.getTime() - (now.getTime() % 60_000)) });
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
