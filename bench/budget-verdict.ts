/**
 * The per-key budget verdict of a many-key bench (bench only), complete whatever the key
 * count. Two records of every key:
 * - the simulator's own per-key arrivals (`/__simulator/requests/per-key`): every request it
 *   received, never trimmed, stamped by its event loop, which runs late on a busy machine
 *   (docs/benchmarks.md: late stamps bunch requests, so they can read over the budget);
 * - Redis's grant log, polled while the load runs: each grant by Redis's clock, the limiter's
 *   own record, but the log trims a grant about one window (1,050 ms at 10/s) after it, so a
 *   poll late on a busy machine misses some.
 * - when a capture runs (tcpdump or dumpcap, root: bench/arrivals-capture.ts), each request's
 *   first byte on the loopback device by the kernel's clock: what the platform received.
 * Each key is judged by the first of capture, grants, stamps whose record of it is complete:
 * the capture when it holds every request the simulator received of the key, the grants when
 * the poll saw at least as many as the simulator received requests (every request has its
 * grant), else the stamps: a key is never judged on a record known to be incomplete.
 */
import { maxInSlidingWindow } from './arrivals-per-key.ts';

export interface KeyRecord {
  /** Requests the simulator received with this key, and its stamps' most in any sliding second. */
  requests: number;
  maxByStamp: number;
  /** Grant times (ms, Redis clock) the poll saw, sorted. */
  grants: readonly number[];
  /** Capture times (ms, kernel clock) of its requests, sorted; absent without a capture. */
  captured?: readonly number[];
}

export type Judge = 'capture' | 'grants' | 'stamp';

export interface BudgetVerdict {
  pass: boolean;
  /** The most requests of one key in any sliding second, each key by the record it was judged on. */
  maxPerKey: number;
  worstKey: string | null;
  keysByCapture: number;
  keysByGrants: number;
  keysByStamp: number;
  /** Keys over the budget: by which record, and how many. */
  over: Array<{ key: string; by: Judge; count: number }>;
  /** The simulator's stamps alone, every key: beside the verdict. */
  maxByStamp: number;
  grantsSeen: number;
  requests: number;
}

export function judgePerKeyBudget(budget: number, keys: ReadonlyMap<string, KeyRecord>): BudgetVerdict {
  let maxPerKey = 0;
  let worstKey: string | null = null;
  let keysByCapture = 0;
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
    const by: Judge = record.captured !== undefined && record.captured.length >= record.requests ? 'capture' : record.grants.length >= record.requests ? 'grants' : 'stamp';
    const count = by === 'capture' ? maxInSlidingWindow(record.captured!) : by === 'grants' ? maxInSlidingWindow(record.grants) : record.maxByStamp;
    if (by === 'capture') keysByCapture += 1;
    else if (by === 'grants') keysByGrants += 1;
    else keysByStamp += 1;
    if (count > maxPerKey) {
      maxPerKey = count;
      worstKey = key;
    }
    if (count > budget) over.push({ key, by, count });
  }
  return { pass: over.length === 0, maxPerKey, worstKey, keysByCapture, keysByGrants, keysByStamp, over, maxByStamp, grantsSeen, requests };
}
