import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLockSession, type AdvisoryLocks, type HeldLock } from '../src/warehouse/lock-session.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * The lock session: every advisory lock of a process on one connection. Two holders of
 * one process exclude each other although the session is re-entrant; another process
 * (another session) is excluded too; a waiting lock pins no connection; the
 * connection's death aborts every holder and the next ask connects again.
 */
describe('the lock session', () => {
  let t: TestDatabase;
  const app = `trainsync-locks-test-${randomBytes(4).toString('hex')}`;
  let a: AdvisoryLocks;
  let b: AdvisoryLocks;

  beforeAll(async () => {
    t = await createTestDatabase();
    a = createLockSession(t.url, { applicationName: app, waitMs: { first: 10, max: 50 } });
    b = createLockSession(t.url, { applicationName: `${app}-b`, waitMs: { first: 10, max: 50 } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await t?.drop();
  });

  const sessions = async (name: string): Promise<number[]> =>
    (await t.pool.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [name])).rows.map((r) => r.pid);

  it('holds many keys on one connection, and refuses a held key to this process and to another', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let holders = 0;
    const holding = Promise.all(
      ['one', 'two', 'three'].map((key) =>
        a.tryLock(key, () => {
          holders += 1;
          return gate;
        }),
      ),
    );
    // Held in Postgres (their work runs), not only reserved in the process.
    await waitFor(async () => (holders === 3 ? true : undefined), 10_000, 'three locks held');
    expect(a.heldKeys().sort()).toEqual(['one', 'three', 'two']);
    expect(await sessions(app)).toHaveLength(1);
    // Re-entrant in Postgres, refused here: a second job of this process does not run.
    expect(await a.tryLock('one', async () => 'ran')).toEqual({ acquired: false });
    expect(await b.tryLock('two', async () => 'ran')).toEqual({ acquired: false });
    expect(await b.tryLock('four', async () => 'ran')).toEqual({ acquired: true, value: 'ran' });
    release();
    expect((await holding).every((r) => r.acquired)).toBe(true);
    expect(a.heldKeys()).toEqual([]);
    // Released in Postgres, not only here.
    expect(await b.tryLock('one', async () => 'ran')).toEqual({ acquired: true, value: 'ran' });
    const { rows } = await t.pool.query<{ n: number }>(
      "select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())",
    );
    expect(rows[0]?.n).toBe(0);
  });

  it('a waiting lock runs once the holder of this process or of another lets go', async () => {
    const order: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = a.withLock('plan', async () => {
      order.push('first');
      await gate;
      order.push('first done');
    });
    await waitFor(async () => (order.length > 0 ? true : undefined), 10_000, 'the first holder');
    const sameProcess = a.withLock('plan', async () => void order.push('same process'));
    const otherProcess = b.withLock('plan', async () => void order.push('other process'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(order).toEqual(['first']);
    release();
    await Promise.all([first, sameProcess, otherProcess]);
    expect(order.slice(0, 2)).toEqual(['first', 'first done']);
    expect(order.slice(2).sort()).toEqual(['other process', 'same process']);
  });

  it("aborts every holder when its connection dies, and connects again for the next lock", async () => {
    const helds: HeldLock[] = [];
    const running = ['x', 'y'].map((key) =>
      a.tryLock(key, async (held) => {
        helds.push(held);
        await new Promise<void>((resolve) => held.signal.addEventListener('abort', () => resolve(), { once: true }));
        return held.lost;
      }),
    );
    await waitFor(async () => (helds.length === 2 ? true : undefined), 10_000, 'two holders');
    const [pid] = await sessions(app);
    await t.pool.query('select pg_terminate_backend($1)', [pid]);
    const lost = await Promise.all(running);
    for (const r of lost) expect(r).toMatchObject({ acquired: true, value: expect.any(Error) });
    expect(a.heldKeys()).toEqual([]);
    // The locks went with the connection: another session takes them once the backend has exited.
    await waitFor(async () => ((await b.tryLock('x', async () => 'ran')).acquired ? true : undefined), 10_000, 'another session to take the lock');
    // And this one connects again.
    expect(await a.tryLock('x', async () => 'again')).toEqual({ acquired: true, value: 'again' });
    const now = await sessions(app);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(pid);
  });
});
