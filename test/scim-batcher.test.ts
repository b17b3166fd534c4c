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
});
