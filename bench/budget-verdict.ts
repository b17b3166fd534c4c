/**
 * The per-key budget verdict of a many-key bench (bench only), complete whatever the key
 * count. Two records of every key:
 * - the simulator's own per-key arrivals (`/__simulator/requests/per-key`): every request it
 *   received, never trimmed, stamped by its event loop, which runs late on a busy machine
 *   (docs/benchmarks.md: late stamps bunch requests, so they can read over the budget);
 * - Redis's grant log, polled while the load runs: each grant by Redis's clock, the limiter's
 *   own record, but the log trims a grant about one window (105 ms at 10/s) after it, so a
 *   poll late on a busy machine misses some.
 * A key is judged by its grants when the poll saw at least as many grants as the simulator
 * received requests of it (every request has its grant), else by the simulator's stamps: a
 * key is never judged on a record known to be incomplete.
 */
import { maxInSlidingWindow } from './arrivals-per-key.ts';

export interface KeyRecord {
  /** Requests the simulator received with this key, and its stamps' most in any sliding second. */
  requests: number;
  maxByStamp: number;
  /** Grant times (ms, Redis clock) the poll saw, sorted. */
  grants: readonly number[];
}

export interface BudgetVerdict {
  pass: boolean;
  /** The most requests of one key in any sliding second, each key by the record it was judged on. */
  maxPerKey: number;
  worstKey: string | null;
  keysByGrants: number;
  keysByStamp: number;
  /** Keys over the budget: by which record, and how many. */
  over: Array<{ key: string; by: 'grants' | 'stamp'; count: number }>;
  /** The simulator's stamps alone, every key: beside the verdict. */
  maxByStamp: number;
  grantsSeen: number;
  requests: number;
}

export function judgePerKeyBudget(budget: number, keys: ReadonlyMap<string, KeyRecord>): BudgetVerdict {
  let maxPerKey = 0;
  let worstKey: string | null = null;
  let keysByGrants = 0;
  let keysByStamp = 0;
  let maxByStamp = 0;
  let grantsSeen = 0;
  let requests = 0;
  const over: BudgetVerdict['over'] = [];
  for (const [key, record] of keys) {
    grantsSeen += record.grants.length;
    requests += record.requests;
    maxByStamp = Math.max(maxByStamp, record.maxByStamp);
    const byGrants = record.grants.length >= record.requests;
    const count = byGrants ? maxInSlidingWindow(record.grants) : record.maxByStamp;
    if (byGrants) keysByGrants += 1;
    else keysByStamp += 1;
    if (count > maxPerKey) {
      maxPerKey = count;
      worstKey = key;
    }
    if (count > budget) over.push({ key, by: byGrants ? 'grants' : 'stamp', count });
  }
  return { pass: over.length === 0, maxPerKey, worstKey, keysByGrants, keysByStamp, over, maxByStamp, grantsSeen, requests };
}
