/**
 * The console's log-in throttle: failed attempts counted per user name (whatever address they
 * come from, so rotating addresses does not buy more guesses at one account) and per client
 * address (whatever names it tries, so one client cannot spray many accounts). Past either limit
 * the form answers 429 until the window ends, without checking the password (not even the right
 * one). Counts live in this process: each worker serving the console keeps its own.
 */

export interface ThrottleLimit {
  /** Failed attempts allowed in a window; the next is refused until it ends. */
  max: number;
  windowMs: number;
}

export interface LoginThrottleLimits {
  perName: ThrottleLimit;
  perAddress: ThrottleLimit;
}

export const LOGIN_LIMITS: LoginThrottleLimits = {
  perName: { max: 5, windowMs: 60_000 },
  perAddress: { max: 20, windowMs: 60_000 },
};

/** Counters kept at most, per kind: past it the oldest go first, so a flood of names cannot grow memory. */
export const MAX_TRACKED = 10_000;

/**
 * The name a throttle counts by: Unicode-normalised, trimmed, case-folded and cut to 200
 * characters, so `Fay`, ` fay ` and `ｆａｙ` are one account's attempts.
 */
export function normaliseUserName(name: string): string {
  return name.normalize('NFKC').trim().toLowerCase().slice(0, 200);
}

interface Window {
  count: number;
  endsAt: number;
}

class Counters {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly limit: ThrottleLimit) {}

  /** Seconds until `key` may try again, or undefined while it is under the limit. */
  waitSeconds(key: string, now: number): number | undefined {
    const window = this.windows.get(key);
    if (!window || window.endsAt <= now || window.count < this.limit.max) return undefined;
    return Math.max(1, Math.ceil((window.endsAt - now) / 1000));
  }

  add(key: string, now: number): void {
    const window = this.windows.get(key);
    if (window && window.endsAt > now) {
      window.count += 1;
      return;
    }
    this.windows.delete(key);
    if (this.windows.size >= MAX_TRACKED) this.evict(now);
    this.windows.set(key, { count: 1, endsAt: now + this.limit.windowMs });
  }

  /** Ended windows go; if none had, the oldest (Map order is insertion order). */
  private evict(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
    if (this.windows.size >= MAX_TRACKED) this.windows.delete(this.windows.keys().next().value!);
  }
}

export interface LoginThrottle {
  /** Seconds to wait when this address or this name is over its limit; undefined: may try. */
  refusal(address: string, name: string): number | undefined;
  /** Counts a failed attempt against both. */
  failed(address: string, name: string): void;
}

export function createLoginThrottle(limits: LoginThrottleLimits = LOGIN_LIMITS, now: () => number = Date.now): LoginThrottle {
  const byName = new Counters(limits.perName);
  const byAddress = new Counters(limits.perAddress);
  return {
    refusal(address, name) {
      const at = now();
      const waits = [byName.waitSeconds(normaliseUserName(name), at), byAddress.waitSeconds(address, at)].filter((w): w is number => w !== undefined);
      return waits.length > 0 ? Math.max(...waits) : undefined;
    },
    failed(address, name) {
      const at = now();
      byName.add(normaliseUserName(name), at);
      byAddress.add(address, at);
    },
  };
}
