import type { Dispatcher } from 'undici';

/**
 * One keep-alive pool per origin (and timeouts) in a process, shared by every
 * organisation's client that calls it. A worker serving a thousand organisations on one
 * platform had a pool per organisation: an organisation's next job came after the
 * 5-second keep-alive, so nearly every job opened a TCP connection of its own (757 in 20 s
 * in one worker of the 1,000-organisation night, docs/benchmarks.md). The key is sent per
 * request, so sharing sockets to the same origin sends nothing anywhere new; the pool is
 * still bound to its one origin and takes only a path.
 */
interface Shared {
  pool: Promise<Dispatcher>;
  users: number;
}

const pools = new Map<string, Shared>();

export interface PoolLease {
  readonly pool: Promise<Dispatcher>;
  /** Once per lease; the last lease of a pool destroys it (idle sockets must not hold the process). */
  release(): Promise<void>;
}

/** The pool for `key`, opened by `open` if no lease holds one. */
export function leasePool(key: string, open: () => Promise<Dispatcher>): PoolLease {
  let shared = pools.get(key);
  if (shared === undefined) {
    shared = { pool: open(), users: 0 };
    pools.set(key, shared);
  }
  shared.users += 1;
  const held = shared;
  let released = false;
  return {
    pool: held.pool,
    async release() {
      if (released) return;
      released = true;
      held.users -= 1;
      if (held.users > 0) return;
      if (pools.get(key) === held) pools.delete(key);
      await (await held.pool).destroy();
    },
  };
}

/** How many pools are open in this process (for tests). */
export function openPoolCount(): number {
  return pools.size;
}
