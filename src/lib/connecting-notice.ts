/**
 * A first connection that takes a while says what it waits for: a person at a terminal
 * (or a log reader) sees which URL is tried and for how long, instead of a blank screen
 * until the timeout names the setting.
 */

/** How long a first connection may take before the process says what it waits for. */
export const CONNECTING_NOTICE_MS = 1_000;

/**
 * The line shown when a first connection is slow: the URL (its password already masked),
 * the most it waits, the setting to check and, when there is one, the setting of the wait.
 */
export function connectingLine(maskedUrl: string, waitMs: number, service: string, setting: string, waitSetting?: string): string {
  const seconds = waitMs % 1000 === 0 ? `${waitMs / 1000} s` : `${(waitMs / 1000).toFixed(1)} s`;
  return `connecting to ${maskedUrl} (waiting up to ${seconds}): ${service} has not answered yet; if this lasts, check ${setting}${waitSetting ? ` (${waitSetting} sets the wait)` : ''}`;
}

/**
 * Runs `work`; if it has not settled after CONNECTING_NOTICE_MS, calls `notice` once.
 * The work's own result or error passes through unchanged.
 */
export async function withConnectingNotice<T>(work: () => Promise<T>, notice: () => void, afterMs: number = CONNECTING_NOTICE_MS): Promise<T> {
  const timer = setTimeout(notice, afterMs);
  try {
    return await work();
  } finally {
    clearTimeout(timer);
  }
}
