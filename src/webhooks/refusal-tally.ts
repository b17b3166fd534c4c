import type { Logger } from '../runtime/log.ts';
import type { OrgScopes } from '../warehouse/scope.ts';
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
  /** Counts one refusal (no I/O). */
  note(org: string, reason: SignatureRefusalReason, header: string, remote: string | undefined): void;
  /** Writes what is counted so far. Never throws: a failure is logged and the counts wait for the next flush. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

export function startRefusalTally(deps: { scopes: Pick<OrgScopes, 'scope'>; log: Logger }, flushMs = REFUSAL_FLUSH_MS): RefusalTally {
  let pending = new Map<string, RefusalCount>();
  let flushing: Promise<void> = Promise.resolve();

  const merge = (count: RefusalCount): void => {
    const key = `${count.org}\u0000${count.reason}\u0000${count.minute.getTime()}`;
    const known = pending.get(key);
    if (known) {
      known.refusals += count.refusals;
      known.lastRemote = count.lastRemote ?? known.lastRemote;
    } else pending.set(key, { ...count });
  };

  const write = async (): Promise<void> => {
    if (pending.size === 0) return;
    const batch = [...pending.values()];
    pending = new Map();
    const byOrg = new Map<string, RefusalCount[]>();
    for (const c of batch) byOrg.set(c.org, [...(byOrg.get(c.org) ?? []), c]);
    for (const [org, counts] of byOrg) {
      try {
        await addRefusalCounts(deps.scopes.scope(org).lend, counts);
      } catch (error) {
        // Kept for the next flush, within bounds: a flood during an outage cannot grow memory.
        const oldest = Date.now() - KEPT_WHILE_DOWN * 60_000;
        for (const c of counts) if (c.minute.getTime() >= oldest) merge(c);
        deps.log.warn({ err: error, org, refusals: counts.reduce((n, c) => n + c.refusals, 0) }, 'could not record the count of refused webhook deliveries; retried at the next flush');
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
    note(org, reason, header, remote) {
      const now = new Date();
      merge({ org, reason, header, lastRemote: remote, refusals: 1, minute: new Date(now.getTime() - (now.getTime() % 60_000)) });
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
