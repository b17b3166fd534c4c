import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CommitOrder } from '../src/warehouse/commit-order.ts';
import type { OrgTx } from '../src/warehouse/scope.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('CommitOrder: concurrent transactions that commit in the order they began', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.pool.query('create table written (n int not null)');
  });
  beforeEach(async () => {
    await t.pool.query('truncate written');
  });
  afterAll(async () => {
    await t?.drop();
  });

  const insert = (n: number) => async (tx: OrgTx): Promise<void> => {
    await tx.client.query('insert into written (n) values ($1)', [n]);
  };
  const committed = async (): Promise<number[]> => (await t.pool.query<{ n: number }>('select n from written order by n')).rows.map((r) => r.n);

  /** A first transaction that inserted 1 and is held open (its work not returned) until `slow` opens; its tail pushes 1. */
  const firstHeldOpen = async (order: CommitOrder, tails: number[]): Promise<{ one: Promise<void>; slow: ReturnType<typeof gate> }> => {
    const slow = gate();
    const firstWorked = gate();
    const one = order.run(
      async (tx) => {
        await insert(1)(tx);
        firstWorked.open();
        await slow.opened;
      },
      async () => void tails.push(1),
    );
    await firstWorked.opened;
    return { one, slow };
  };

  it('a later transaction whose work is done waits for the earlier one before its tail and commit', async () => {
    const order = new CommitOrder(t.scope(), { synchronousCommit: false });
    const tails: number[] = [];
    const { one, slow } = await firstHeldOpen(order, tails);
    let secondWorked = false;
    const two = order.run(
      async (tx) => {
        await insert(2)(tx);
        secondWorked = true;
      },
      async () => void tails.push(2),
    );
    // The second's work finishes while the first is held open; nothing of it is committed.
    await expect.poll(() => secondWorked).toBe(true);
    expect(await committed()).toEqual([]);
    expect(tails).toEqual([]);
    slow.open();
    await Promise.all([one, two]);
    expect(tails).toEqual([1, 2]);
    expect(await committed()).toEqual([1, 2]);
  });

  it('the last transaction takes no order lock of its own, still waits for its predecessor, and nothing may follow it', async () => {
    const order = new CommitOrder(t.scope(), { synchronousCommit: false });
    const tails: number[] = [];
    const { one, slow } = await firstHeldOpen(order, tails);
    let lastWorked = false;
    let advisoryLocksOfLast = -1;
    const last = order.run(
      async (tx) => {
        await insert(2)(tx);
        // Its own transaction holds no advisory lock yet (the predecessor's shared one comes after the work).
        advisoryLocksOfLast = (await tx.client.query<{ n: number }>("select count(*)::int as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()")).rows[0]!.n;
        lastWorked = true;
      },
      async () => void tails.push(2),
      { last: true },
    );
    await expect.poll(() => lastWorked).toBe(true);
    expect(advisoryLocksOfLast).toBe(0);
    expect(await committed()).toEqual([]);
    slow.open();
    await Promise.all([one, last]);
    expect(tails).toEqual([1, 2]);
    expect(await committed()).toEqual([1, 2]);
    expect(() => order.run(insert(3), async () => undefined)).toThrow(/after the last one/);
    expect(await committed()).toEqual([1, 2]);
  });

  it('a later transaction whose predecessor rolled back (and is retried) commits only after the retry committed', async () => {
    const order = new CommitOrder(t.scope());
    const release = gate();
    const firstWorked = gate();
    let attemptsOfFirst = 0;
    let attemptsOfSecond = 0;
    const one = order.run(
      async (tx) => {
        attemptsOfFirst += 1;
        await insert(1)(tx);
        if (attemptsOfFirst === 1) {
          firstWorked.open();
          await release.opened;
          // Postgres' deadlock error: withRetriedTransaction runs the transaction again.
          throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
        }
      },
      async () => undefined,
    );
    await firstWorked.opened;
    const two = order.run(
      async (tx) => {
        attemptsOfSecond += 1;
        await insert(2)(tx);
        if (attemptsOfSecond === 1) release.open();
      },
      // What another connection sees when the second is about to commit: the first's row.
      async () => committed(),
    );
    const [, seenBeforeSecondCommitted] = await Promise.all([one, two]);
    expect(attemptsOfFirst).toBe(2);
    expect(seenBeforeSecondCommitted).toEqual([1]);
    expect(await committed()).toEqual([1, 2]);
  });

  it('a later transaction never commits after an earlier one failed for good', async () => {
    const order = new CommitOrder(t.scope());
    const firstWorked = gate();
    const release = gate();
    const one = order.run(
      async (tx) => {
        await insert(1)(tx);
        firstWorked.open();
        await release.opened;
        throw new Error('the platform sent garbage');
      },
      async () => undefined,
    );
    await firstWorked.opened;
    const two = order.run(async (tx) => {
      await insert(2)(tx);
      release.open();
    }, async () => undefined);
    await expect(one).rejects.toThrow('the platform sent garbage');
    await expect(two).rejects.toThrow('the platform sent garbage');
    expect(await committed()).toEqual([]);
  });
});
