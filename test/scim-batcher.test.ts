import { describe, expect, it } from 'vitest';
import { createBatcher } from '../src/scim/batcher.ts';

describe('SCIM group commit', () => {
  it('puts changes submitted in the same turn of the event loop into one batch', async () => {
    const batches: number[][] = [];
    const batcher = createBatcher<number, number>(
      async (items) => {
        batches.push(items);
        return items.map((i) => i * 10);
      },
      (i) => String(i),
      500,
    );
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => batcher.submit(i)));
    expect(answers).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(batches).toEqual([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]);
  });

  it('keeps one change per key in a batch, later ones of that key in arrival order after it', async () => {
    const batches: string[][] = [];
    const batcher = createBatcher<string, string>(
      async (items) => {
        batches.push(items);
        return items;
      },
      (item) => item.split(':')[0]!,
      500,
    );
    await Promise.all(['a:1', 'b:1', 'a:2', 'c:1', 'a:3'].map((i) => batcher.submit(i)));
    expect(batches).toEqual([['a:1', 'b:1', 'c:1'], ['a:2'], ['a:3']]);
  });

  it('splits a burst larger than the batch limit', async () => {
    const sizes: number[] = [];
    const batcher = createBatcher<number, number>(
      async (items) => {
        sizes.push(items.length);
        return items;
      },
      (i) => String(i),
      4,
    );
    await Promise.all(Array.from({ length: 10 }, (_, i) => batcher.submit(i)));
    expect(sizes).toEqual([4, 4, 2]);
    await batcher.idle();
  });

  it('idle() waits for changes submitted in the same turn, whose batch has not started yet', async () => {
    const written: number[] = [];
    const batcher = createBatcher<number, number>(
      async (items) => {
        written.push(...items);
        return items;
      },
      (i) => String(i),
      500,
    );
    const answers = [batcher.submit(1), batcher.submit(2)];
    await batcher.idle();
    expect(written).toEqual([1, 2]);
    await Promise.all(answers);
  });

  it('a batch that fails is split: a bad entry rejects its own caller only, every other entry settles with its result', async () => {
    const runs: number[][] = [];
    const batcher = createBatcher<number, number>(
      async (items) => {
        runs.push(items);
        // One statement for the batch: one bad item fails it whole (as a multi-row INSERT does).
        if (items.includes(13) || items.includes(7)) throw new Error(`bad item in ${items.join(',')}`);
        return items.map((i) => i * 2);
      },
      (i) => String(i),
      500,
    );
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => batcher.submit(i)));
    outcomes.forEach((o, i) => {
      if (i === 13 || i === 7) expect(o.status, `item ${i}`).toBe('rejected');
      else expect(o, `item ${i}`).toEqual({ status: 'fulfilled', value: i * 2 });
    });
    // The bad ones were each tried alone; the halves found them in far fewer runs than one per item.
    expect(runs.filter((r) => r.length === 1 && (r[0] === 7 || r[0] === 13)).length).toBe(2);
    expect(runs.length).toBeLessThan(20);
  });

  it('an outage (split says no) fails the batch whole, without trying each half', async () => {
    let runs = 0;
    const batcher = createBatcher<number, number>(
      async () => {
        runs += 1;
        throw new Error('Connection terminated unexpectedly');
      },
      (i) => String(i),
      500,
      { split: () => false },
    );
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => batcher.submit(i)));
    expect(outcomes.every((o) => o.status === 'rejected')).toBe(true);
    expect(runs).toBe(1);
  });
});
