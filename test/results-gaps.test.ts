import { describe, expect, it } from 'vitest';
import { GapWatch, unionGap, type PageTiming } from '../src/sync/results/gaps.ts';

/** The n-th page of a read page by page: asked for after the one before was answered. */
const inTurn = (n: number): PageTiming => ({ sent: 2 * n - 1, received: 2 * n });

/** `n` ids of one page, numbered from `first`. */
const ids = (first: number, n = 50): string[] => Array.from({ length: n }, (_, i) => `r${first + i}`);

describe('GapWatch: when a paged read may have skipped a result', () => {
  it('arrivals at the end are no gap: totals only grow and the ids account for the last total', () => {
    const watch = new GapWatch(1, undefined);
    watch.page(1, inTurn(1), 120, ids(0));
    watch.page(2, inTurn(2), 123, ids(50));
    watch.page(3, inTurn(3), 126, ids(100, 26));
    expect(watch.end(true)).toBeUndefined();
    expect(watch.total).toBe(126);
  });

  it('pages answered out of order while results arrive are no gap', () => {
    const watch = new GapWatch(1, undefined);
    // Pages 2 and 3 were asked for together; page 3 was served first, page 2 after two arrivals.
    watch.page(1, { sent: 1, received: 2 }, 150, ids(0));
    watch.page(2, { sent: 3, received: 6 }, 152, ids(50));
    watch.page(3, { sent: 4, received: 5 }, 150, ids(100));
    watch.page(4, { sent: 7, received: 8 }, 152, ids(150, 2));
    expect(watch.end(true)).toBeUndefined();
  });

  it('a result seen twice (shifted forward by an arrival ahead of the reader) counts once', () => {
    const watch = new GapWatch(1, undefined);
    watch.page(1, inTurn(1), 100, ids(0));
    // One arrival near the start moved r49 onto page 2; the arrival itself was missed.
    watch.page(2, inTurn(2), 101, ids(49, 50));
    watch.page(3, inTurn(3), 101, ids(99, 1));
    expect(watch.end(true)).toMatchObject({ from: 1, to: undefined, reason: '1 result(s) unaccounted for: read 100 distinct of 101' });
  });

  it('a removal while pages read ahead are in flight is one fall, shown against the page answered before them', () => {
    const watch = new GapWatch(1, undefined);
    watch.page(1, { sent: 1, received: 2 }, 300, ids(0));
    // Pages 2–4 asked for together after page 1 was answered; a result went after page 2 was served.
    watch.page(2, { sent: 3, received: 6 }, 300, ids(50));
    watch.page(3, { sent: 4, received: 7 }, 299, ids(101));
    watch.page(4, { sent: 5, received: 8 }, 299, ids(151));
    // Page 5 was asked for after page 4 was answered: no new fall.
    watch.page(5, { sent: 9, received: 10 }, 299, ids(201));
    expect(watch.soFar()).toEqual({ reason: '1 result(s) removed while paged (totalEntities fell)', from: 1, to: 4 });
  });

  it('a fall of the total names the pages results moved back onto, not the whole list', () => {
    const watch = new GapWatch(1, undefined);
    for (let page = 1; page <= 3; page++) watch.page(page, inTurn(page), 400, ids((page - 1) * 50));
    // One removal behind the reader before page 4 was answered: r150 moved onto page 3.
    for (let page = 4; page <= 8; page++) watch.page(page, inTurn(page), 399, ids((page - 1) * 50 + 1, page === 8 ? 49 : 50));
    expect(watch.end(true)).toEqual({ reason: '1 result(s) removed while paged (totalEntities fell)', from: 3, to: 4 });
  });

  it('later removals widen the range back; a resumed read compares with the total it expected', () => {
    const watch = new GapWatch(5, 500);
    watch.page(5, inTurn(1), 440, ids(200));
    watch.page(6, inTurn(2), 380, ids(250));
    // 60 before page 5 (two pages back from 5 by all 120 removed since), then 60 more before page 6.
    expect(watch.soFar()).toEqual({ reason: '120 result(s) removed while paged (totalEntities fell)', from: 2, to: 6 });
  });

  it('a gap known from before a restart stays until read again', () => {
    const watch = new GapWatch(10, 500, { reason: 'earlier', from: 3, to: 4 });
    watch.page(10, inTurn(1), 500, ids(450));
    expect(watch.end(false)).toEqual({ reason: 'earlier', from: 3, to: 4 });
    expect(unionGap({ reason: 'a', from: 3, to: 4 }, { reason: 'b', from: 1, to: undefined })).toEqual({ reason: 'b', from: 1, to: undefined });
  });
});
