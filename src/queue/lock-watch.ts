import type { HeldLock } from '../warehouse/lock-session.ts';

/** A job's exclusive lock, watched: see `watchLock`. */
export interface WatchedLock {
  /** Follows the lock once held: its loss aborts the job's signal. */
  follow(held: HeldLock): void;
  /** The job's signal: the worker's shutdown, or the lock's connection failing. */
  signal: AbortSignal;
  /** Why the lock's connection failed, once it has. */
  readonly lost: unknown;
  /** Stops following the worker's signal and the lock (call when the attempt ends). */
  release(): void;
}

/**
 * An advisory lock lives on the process's lock session (`src/warehouse/lock-session.ts`).
 * When that connection dies (a restart, a failover) the lock is gone and another worker
 * may start the same job, so the attempt must stop too: the job's signal aborts, the job
 * stops at its next page (as for a shutdown, keeping its checkpoint and its run) and
 * waits for Postgres like any job whose query failed, even when its pool connections
 * were idle and never noticed.
 */
export function watchLock(shutdown: AbortSignal): WatchedLock {
  const abort = new AbortController();
  const forward = (): void => abort.abort(shutdown.reason);
  if (shutdown.aborted) forward();
  else shutdown.addEventListener('abort', forward, { once: true });
  let lock: HeldLock | undefined;
  const onLost = (): void => abort.abort(lock?.lost);
  return {
    follow(held) {
      lock = held;
      if (held.signal.aborted) onLost();
      else held.signal.addEventListener('abort', onLost, { once: true });
    },
    signal: abort.signal,
    get lost() {
      return lock?.lost;
    },
    release: () => {
      shutdown.removeEventListener('abort', forward);
      lock?.signal.removeEventListener('abort', onLost);
    },
  };
}
