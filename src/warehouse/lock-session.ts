import pg from 'pg';
import type { Logger } from 'pino';
import { CONNECT_TIMEOUT_MS } from './connection-settings.ts';

/**
 * Every session advisory lock of one process, held on ONE dedicated connection (Postgres
 * lets a session hold any number of them), so a process's connections do not grow with
 * the jobs it runs: a thousand organisations' jobs hold their locks on one session, and
 * their queries share the bounded pool.
 *
 * Two things follow from sharing one session:
 * - Session advisory locks are re-entrant: a second `pg_try_advisory_lock` of a key the
 *   session holds succeeds. Two jobs of this process asking for one key must exclude each
 *   other as two processes do, so the keys held are kept here and a second ask of a held
 *   key is refused (or, waiting, waits) in-process, before Postgres is asked.
 * - The connection's death takes every lock with it: each holder's signal aborts with the
 *   failure (as one job's lock connection dying did before), and the next ask connects
 *   again. A key stays taken in-process until its holder has finished, so a job still
 *   winding down is never run twice by this process.
 *
 * The connection needs a real session: straight to Postgres, or through a session-mode
 * pool, never a transaction-mode one (TRAINSYNC_LOCK_DATABASE_URL; docs/operator.md).
 */

/** One lock held: aborted when the session holding it dies. */
export interface HeldLock {
  readonly key: string;
  /** Aborts, with the connection's failure as its reason, when the lock is lost. */
  readonly signal: AbortSignal;
  /** Why the lock was lost, once it has been. */
  readonly lost: unknown;
}

export type TryLockResult<T> = { acquired: true; value: T } | { acquired: false };

/** Session advisory locks named by a text key (any process, one database). */
export interface AdvisoryLocks {
  /** Runs `fn` holding the lock, or gives up at once when another job of any process holds it. */
  tryLock<T>(key: string, fn: (held: HeldLock) => Promise<T>): Promise<TryLockResult<T>>;
  /** Runs `fn` holding the lock, waiting (asking again with backoff, pinning nothing) while another holds it. */
  withLock<T>(key: string, fn: (held: HeldLock) => Promise<T>): Promise<T>;
  /** The keys this process holds now (for tests and diagnostics). */
  heldKeys(): string[];
  /** Ends the session (its locks with it). */
  close(): Promise<void>;
}

export interface LockSessionOptions {
  log?: Logger;
  /** Shown in pg_stat_activity; default 'trainsync-locks'. */
  applicationName?: string;
  /** The first and the longest pause between two asks of a waiting lock; default 20 ms and 250 ms (an ask is one short statement on the session). */
  waitMs?: { first: number; max: number };
}

interface Session {
  client: pg.Client;
  dead: boolean;
  /** Connected once: a connect that failed is the asker's error, not a lost session. */
  connected: boolean;
  /** The last statement sent: the next one goes after it (pg deprecates queueing on a busy client). */
  tail: Promise<unknown>;
  holders: Set<Holder>;
}

interface Holder extends HeldLock {
  lose(error: unknown): void;
}

function holderOf(key: string): Holder {
  const abort = new AbortController();
  let lost: unknown;
  return {
    key,
    signal: abort.signal,
    get lost() {
      return lost;
    },
    lose(error) {
      lost ??= error;
      abort.abort(error);
    },
  };
}

/** The code and message of a connection failure: pg attaches the whole client to its errors. */
function briefly(error: unknown): Record<string, unknown> {
  const code = (error as { code?: unknown } | null)?.code;
  return { ...(typeof code === 'string' ? { code } : {}), reason: error instanceof Error ? error.message : String(error) };
}

/** One statement on the session, after those already sent: many jobs ask at once, one connection answers. */
function query<R extends pg.QueryResultRow>(session: Session, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
  const result = session.tail.then(() => session.client.query<R>(text, values));
  session.tail = result.catch(() => undefined);
  return result;
}

/** A lock session on `databaseUrl`, connected on first use and again after a failure. */
export function createLockSession(databaseUrl: string, options: LockSessionOptions = {}): AdvisoryLocks {
  const waitMs = options.waitMs ?? { first: 20, max: 250 };
  /** Waiters of this process by key: woken as soon as a holder of this process lets go, not at their next ask. */
  const wakers = new Map<string, Set<() => void>>();
  const held = new Set<string>();
  let current: Promise<Session> | undefined;
  let closed = false;

  const die = (session: Session, error: unknown): void => {
    if (session.dead) return;
    session.dead = true;
    if (current !== undefined) void current.then((s) => s === session && (current = undefined), () => undefined);
    if (session.connected) options.log?.warn({ ...briefly(error), locks: session.holders.size }, 'the lock session lost its connection; the jobs holding locks on it stop and go back to the queue');
    for (const holder of session.holders) holder.lose(error);
    session.holders.clear();
    session.client.end().catch(() => undefined);
  };

  const open = async (): Promise<Session> => {
    const client = new pg.Client({
      connectionString: databaseUrl,
      application_name: options.applicationName ?? 'trainsync-locks',
      // As the pool's (src/warehouse/pool.ts): a server gone without a word fails the
      // session after the OS's keepalive probes, so its jobs stop rather than run unlocked.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    const session: Session = { client, dead: false, connected: false, holders: new Set(), tail: Promise.resolve() };
    client.on('error', (error) => die(session, error));
    client.on('end', () => die(session, new Error('the lock session connection ended')));
    try {
      await client.connect();
    } catch (error) {
      session.dead = true;
      client.end().catch(() => undefined);
      throw error;
    }
    session.connected = true;
    return session;
  };

  const sessionNow = async (): Promise<Session> => {
    if (closed) throw new Error('the lock session is closed');
    if (current === undefined) {
      const opening = open();
      current = opening;
      // A failed connect is not kept: the next ask tries again.
      opening.catch(() => {
        if (current === opening) current = undefined;
      });
    }
    const session = await current;
    if (!session.dead) return session;
    if (current !== undefined && (await current) === session) current = undefined;
    return sessionNow();
  };

  /** Takes `key` or returns undefined when it is taken (here or by another session). */
  const acquire = async (key: string): Promise<{ holder: Holder; session: Session } | undefined> => {
    // Reserved before any await: two asks of this process never both reach Postgres.
    if (held.has(key)) return undefined;
    held.add(key);
    try {
      const session = await sessionNow();
      const { rows } = await query<{ locked: boolean }>(session, 'select pg_try_advisory_lock(hashtext($1)) as locked', [key]);
      if (!rows[0]?.locked) {
        held.delete(key);
        return undefined;
      }
      const holder = holderOf(key);
      if (session.dead) holder.lose(new Error('the lock session connection ended'));
      else session.holders.add(holder);
      return { holder, session };
    } catch (error) {
      held.delete(key);
      throw error;
    }
  };

  const run = async <T>({ holder, session }: { holder: Holder; session: Session }, fn: (held: HeldLock) => Promise<T>): Promise<T> => {
    try {
      return await fn(holder);
    } finally {
      session.holders.delete(holder);
      // A dead session took the lock with it; a live one is told, and the key freed after.
      if (!session.dead) await query(session, 'select pg_advisory_unlock(hashtext($1))', [holder.key]).catch(() => undefined);
      held.delete(holder.key);
      for (const wake of wakers.get(holder.key) ?? []) wake();
    }
  };

  return {
    async tryLock(key, fn) {
      const got = await acquire(key);
      if (!got) return { acquired: false };
      return { acquired: true, value: await run(got, fn) };
    },
    async withLock(key, fn) {
      for (let pause = waitMs.first; ; pause = Math.min(waitMs.max, pause * 1.5)) {
        const got = await acquire(key);
        if (got) return run(got, fn);
        // Jittered, so waiters of many processes do not ask in step; a holder of this process wakes it at once.
        await new Promise<void>((resolve) => {
          let waiting = wakers.get(key);
          if (!waiting) wakers.set(key, (waiting = new Set()));
          const done = (): void => {
            clearTimeout(timer);
            waiting.delete(done);
            if (waiting.size === 0) wakers.delete(key);
            resolve();
          };
          const timer = setTimeout(done, pause * (0.75 + Math.random() * 0.5));
          waiting.add(done);
        });
      }
    },
    heldKeys: () => [...held],
    async close() {
      closed = true;
      const opening = current;
      current = undefined;
      const session = await opening?.catch(() => undefined);
      if (session && !session.dead) {
        session.dead = true;
        await session.client.end().catch(() => undefined);
      }
    },
  };
}
