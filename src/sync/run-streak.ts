import type { RunStatus } from './tables.ts';

/** What the alerts read of a resource's newest finished runs. */
export interface Streak {
  /** The newest finished run failed. */
  lastFailed: boolean;
  /** How many of the newest finished runs ended incomplete, counted until one did not. */
  incompleteInARow: number;
}

/** The streak of statuses given newest first (finished runs only: succeeded, incomplete, failed). */
export function runStreak(recent: readonly RunStatus[]): Streak {
  const firstOther = recent.findIndex((status) => status !== 'incomplete');
  return { lastFailed: recent[0] === 'failed', incompleteInARow: firstOther === -1 ? recent.length : firstOther };
}
