import { maxInSlidingWindow } from '../../bench/arrivals-per-key.ts';
import { GRANT_LOG_MESSAGE } from '../../src/platform/request-budget.ts';

/**
 * The request budget's grants as the budget recorded them in Redis, read from its debug
 * log lines (`request budget: granted`: how many, scored at which Redis time in µs, in
 * which grant log). Tests of the budget count these, not arrivals at the simulator: Redis's
 * clock is the one every process shares and the one the budget decides by, while the
 * simulator stamps a request when its own event loop gets to it, late in clumps when that
 * process is starved (21 "in a second" by stamp on a loaded machine, where the grants held 20).
 */

export interface Grant {
  /** The grant log (Redis key) it is in: one per budget (origin and API key). */
  budget: string;
  /** Its score: Redis time, µs. */
  atUs: number;
}

/** Every grant in some JSON log lines (a process's output, or lines a capturing logger kept). */
export function grantsIn(lines: string | readonly string[]): Grant[] {
  const all = typeof lines === 'string' ? lines.split('\n') : lines.flatMap((l) => l.split('\n'));
  const grants: Grant[] = [];
  for (const line of all) {
    if (!line.includes(GRANT_LOG_MESSAGE)) continue;
    let record: { msg?: unknown; budget?: unknown; granted?: unknown; grantedAtUs?: unknown };
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      continue;
    }
    if (record.msg !== GRANT_LOG_MESSAGE || typeof record.budget !== 'string' || typeof record.granted !== 'number' || typeof record.grantedAtUs !== 'number') continue;
    for (let i = 0; i < record.granted; i++) grants.push({ budget: record.budget, atUs: record.grantedAtUs });
  }
  return grants;
}

/** The most grants whose Redis time falls within any sliding second (half-open, as the simulator counts). */
export function maxGrantsInAnySecond(grants: readonly Grant[]): number {
  return maxInSlidingWindow(grants.map((g) => g.atUs / 1000).sort((a, b) => a - b), 1000);
}

/** Grants per budget (grant log). */
export function grantsByBudget(grants: readonly Grant[]): Map<string, Grant[]> {
  const by = new Map<string, Grant[]>();
  for (const g of grants) by.set(g.budget, [...(by.get(g.budget) ?? []), g]);
  return by;
}
