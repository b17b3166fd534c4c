import type { PgLender } from '../warehouse/transaction.ts';

/** A job's exclusive lock, watched: see `watchLock`. */
export interface WatchedLock {
  /** Lends the connection that holds the lock, listening to it for as long as it is lent. */
  lend: PgLender;
  /** The job's signal: the worker's shutdown, or the lock's connection failing. */
  signal: AbortSignal;
  /** Why the lock's connection failed, once it has. */
  readonly lost: unknown;
  /** Stops following the worker's signal (call when the attempt ends). */
  release(): void;
}

/**
 * An advisory lock lives on one connection. When that connection dies (a restart, a
 * failover) the lock is gone and another worker may start the same job, so the attempt
 * must stop too: the job's signal aborts, the job stops at its next page (as for a
 * shutdown, keeping its checkpoint and its run) and waits for Postgres like any job
 * whose query failed, even when its other connections were idle and never noticed.
 */
export function watchLock(lend: PgLender, shutdown: AbortSignal): WatchedLock {
  const abort = new AbortController();
  const forward = (): void => abort.abort(shutdown.reason);
  if (shutdown.aborted) forward();
  else shutdown.addEventListener('abort', forward, { once: true });
  let lost: unknown;
  return {
    lend: (fn) =>
      lend(async (client) => {
        const onError = (error: Error): void => {
          lost ??= error;
          abort.abort(error);
        };
        client.on('error', onError);
        try {
          return await fn(client);
        } finally {
          client.off('error', onError);
        }
      }),
    signal: abort.signal,
    get lost() {
      return lost;
    },
    release: () => shutdown.removeEventListener('abort', forward),
  };
}
