/**
 * Retry timing: exponential backoff with full jitter (AWS architecture blog, "Exponential
 * Backoff and Jitter"), a server's `Retry-After` as a floor, everything capped.
 */

export interface RetryPolicy {
  /** Attempts after the first; default 6. */
  retries: number;
  /** The first backoff ceiling; doubles each attempt. Default 500 ms. */
  baseDelayMs: number;
  /** No single wait exceeds this, Retry-After included. Default 60 s. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 6, baseDelayMs: 500, maxDelayMs: 60_000 };

/**
 * `Retry-After` as milliseconds from `now`: delta seconds (`"3"`, `"1.5"`) or an HTTP
 * date. Undefined when absent or unreadable; 0 for a date in the past.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * How long to wait before retry number `retry` (1-based). Full jitter spreads clients
 * that failed together; a Retry-After is a floor because retrying earlier only earns
 * another 429.
 */
export function retryDelay(retry: number, policy: RetryPolicy, retryAfterMs?: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  const jittered = Math.floor(random() * ceiling);
  const floor = retryAfterMs ?? 0;
  return Math.min(policy.maxDelayMs, Math.max(jittered, floor));
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
