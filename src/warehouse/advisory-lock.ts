import type { AdvisoryLocks, HeldLock, TryLockResult } from './lock-session.ts';

/**
 * Postgres advisory locks named by a text key (any process, one database), held on the
 * process's lock session (`lock-session.ts`): one connection for all of them, never a
 * pooled connection pinned for the length of `fn`. A connection lost meanwhile takes
 * the lock with it (the holder's signal aborts), so a crash never leaves it held.
 */

export type { AdvisoryLocks, HeldLock, TryLockResult };

/** Runs `fn` holding the lock, waiting for it as long as another job (of any process) holds it. */
export function withAdvisoryLock<T>(locks: AdvisoryLocks, key: string, fn: (held: HeldLock) => Promise<T>): Promise<T> {
  return locks.withLock(key, fn);
}

/** Runs `fn` holding the lock, or gives up at once, returning `{ acquired: false }`, when another job holds it. */
export function tryAdvisoryLock<T>(locks: AdvisoryLocks, key: string, fn: (held: HeldLock) => Promise<T>): Promise<TryLockResult<T>> {
  return locks.tryLock(key, fn);
}
