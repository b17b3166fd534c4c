import fc from 'fast-check';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { parseFeedMinShare } from '../src/settings/feed-min-share.ts';
import { decideFeedShrink, feedDataRows, rowsNeeded, type ShrinkGuardInput } from '../src/provisioning/feed/shrink-guard.ts';

/**
 * The feed-shrink guard decides who may lose access, so it gets a proof (docs/it-admin.md,
 * "Feeds that shrink") and these properties check each step of it on random inputs.
 */

const input = fc.record({
  mode: fc.constantFrom('full' as const, 'delta' as const),
  dataRows: fc.nat({ max: 100_000 }),
  activeEmployees: fc.nat({ max: 100_000 }),
  minSharePercent: fc.integer({ min: 0, max: 100 }),
  allowShrink: fc.boolean(),
});

const refused = (i: ShrinkGuardInput): boolean => decideFeedShrink(i).refused;

describe('decideFeedShrink', () => {
  it('refuses exactly a full feed without --allow-shrink whose rows are fewer than max(1, ceil(share × active))', () => {
    fc.assert(
      fc.property(input, (i) => {
        // Integers only: rows × 100 against share × active, no float rounding.
        const short = i.dataRows === 0 || i.dataRows * 100 < i.minSharePercent * i.activeEmployees;
        expect(refused(i)).toBe(i.mode === 'full' && !i.allowShrink && short);
      }),
    );
  });

  it('a delta feed, or --allow-shrink, is never refused', () => {
    fc.assert(fc.property(input, (i) => !refused({ ...i, mode: 'delta' }) && !refused({ ...i, allowShrink: true })));
  });

  it('a full feed without data rows is always refused, whatever the share and the employees known', () => {
    fc.assert(
      fc.property(input, (i) => {
        const decision = decideFeedShrink({ ...i, mode: 'full', allowShrink: false, dataRows: 0 });
        return decision.refused && decision.reason === 'empty-feed';
      }),
    );
  });

  it('is monotone: more rows never turn a pass into a refusal; a higher share or more active employees never turn a refusal into a pass', () => {
    fc.assert(
      fc.property(input, fc.nat({ max: 1000 }), fc.integer({ min: 0, max: 100 }), fc.nat({ max: 1000 }), (i, moreRows, share2, moreActive) => {
        if (!refused(i)) expect(refused({ ...i, dataRows: i.dataRows + moreRows })).toBe(false);
        if (refused(i)) {
          expect(refused({ ...i, minSharePercent: Math.max(i.minSharePercent, share2) })).toBe(true);
          expect(refused({ ...i, activeEmployees: i.activeEmployees + moreActive })).toBe(true);
        }
      }),
    );
  });

  it('a feed cut short (a subset of the workforce) that passes leaves out at most floor((100 - share)% of the active employees)', () => {
    // The accident the guard is for: an export that stopped part-way lists some of the active
    // employees and nobody else. Every active employee it leaves out would become a leaver.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2000 }).chain((active) => fc.record({ active: fc.constant(active), listed: fc.subarray([...Array(active).keys()]), share: fc.integer({ min: 0, max: 100 }) })),
        ({ active, listed, share }) => {
          const decision = decideFeedShrink({ mode: 'full', dataRows: listed.length, activeEmployees: active, minSharePercent: share, allowShrink: false });
          if (decision.refused) return true;
          const leftOut = active - listed.length;
          return leftOut <= Math.floor((active * (100 - share)) / 100);
        },
      ),
    );
  });

  it('says the rows read, the active employees known, the share and the flag', () => {
    const shrink = decideFeedShrink({ mode: 'full', dataRows: 12, activeEmployees: 277, minSharePercent: 50, allowShrink: false });
    expect(shrink).toMatchObject({ refused: true, reason: 'feed-shrink', needed: 139 });
    if (!shrink.refused) throw new Error('expected a refusal');
    expect(shrink.message).toContain('12 data rows');
    expect(shrink.message).toContain('50% of the 277 active employees known');
    expect(shrink.message).toContain('139 needed, TRAINSYNC_FEED_MIN_SHARE');
    expect(shrink.message).toContain('--allow-shrink');
    const empty = decideFeedShrink({ mode: 'full', dataRows: 0, activeEmployees: 277, minSharePercent: 50, allowShrink: false, shareSetting: 'feedMinShare of north' });
    if (!empty.refused) throw new Error('expected a refusal');
    expect(empty.message).toMatch(/^the feed has 0 data rows .*every one of the 277 active employees known would be a leaver/);
    expect(empty.message).toContain('--allow-shrink');
    expect(decideFeedShrink({ mode: 'full', dataRows: 139, activeEmployees: 277, minSharePercent: 50, allowShrink: false })).toEqual({ refused: false });
  });

  it('rowsNeeded is ceil(share × active / 100), at least 1', () => {
    expect([rowsNeeded(277, 50), rowsNeeded(0, 50), rowsNeeded(10, 0), rowsNeeded(3, 100), rowsNeeded(1, 1)]).toEqual([139, 1, 1, 3, 1]);
  });
});

describe('the guard in the pipeline, against a generated model of feeds, load-feed and reconcile --fix', () => {
  /**
   * The model: a workforce of people with an access each (trainsync.identities) and the last
   * snapshot (training.employees: listed or removed). `provision` of a full feed and
   * `reconcile --fix` of the snapshot disable everyone they leave out, and meet the guard as
   * the pipeline does (pipeline/shrink.ts: the known active employees are those with access
   * and those the snapshot lists as active; a snapshot meets it only when someone it removed
   * still has access). `load-feed` changes the snapshot alone, with no guard. Whatever the
   * order of steps and whichever subsets the feeds list, no one step takes access from more
   * than floor((100 - share)% of the known active) by absence, and an empty statement never
   * takes any.
   */
  type Step = { kind: 'provision' | 'load-feed'; listed: number[] } | { kind: 'reconcile' };
  const people = 60;
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constantFrom('provision' as const, 'load-feed' as const), listed: fc.subarray([...Array(people).keys()]) }),
    fc.constant({ kind: 'reconcile' as const }),
  );

  it('no step of any sequence disables more than the bound by absence', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), fc.integer({ min: 0, max: 100 }), (steps, share) => {
        const access = new Set([...Array(people).keys()]);
        let snapshot = new Set(access);
        for (const s of steps) {
          const knownSet = new Set([...access, ...snapshot]);
          const known = knownSet.size;
          const bound = Math.floor((known * (100 - share)) / 100);
          if (s.kind === 'load-feed') {
            snapshot = new Set(s.listed);
            continue;
          }
          const listed = s.kind === 'provision' ? new Set(s.listed) : snapshot;
          const absent = [...access].filter((p) => !listed.has(p));
          // The snapshot is a whole statement only when it takes someone's access by leaving them out.
          if (s.kind === 'reconcile' && absent.length === 0) continue;
          const decision = decideFeedShrink({ mode: 'full', dataRows: listed.size, activeEmployees: known, minSharePercent: share, allowShrink: false, subject: s.kind === 'reconcile' ? 'snapshot' : 'feed' });
          if (decision.refused) {
            expect(decision.needed).toBeGreaterThan(listed.size);
            continue;
          }
          expect(listed.size).toBeGreaterThan(0);
          if ([...listed].every((p) => knownSet.has(p))) expect(absent.length).toBeLessThanOrEqual(bound);
          for (const p of absent) access.delete(p);
          if (s.kind === 'provision') {
            for (const p of listed) access.add(p);
            snapshot = new Set(listed);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('decides a snapshot by the same rule as a feed, in its own words', () => {
    fc.assert(
      fc.property(input, (i) => {
        const asSnapshot = decideFeedShrink({ ...i, mode: 'full', allowShrink: false, subject: 'snapshot' });
        const asFeed = decideFeedShrink({ ...i, mode: 'full', allowShrink: false });
        expect(asSnapshot.refused).toBe(asFeed.refused);
        if (asSnapshot.refused && asFeed.refused) {
          expect(asSnapshot.needed).toBe(asFeed.needed);
          expect(asSnapshot.message).toMatch(/^the last HR snapshot \(training\.employees\) lists /);
          expect(asSnapshot.message).toContain('--allow-shrink');
        }
      }),
    );
  });
});

describe('feedDataRows', () => {
  it('counts every line that held a row, valid or rejected, once', () => {
    const row = (line: number) => ({ line }) as never;
    const error = (line: number) => ({ line }) as never;
    expect(feedDataRows({ rows: [row(2), row(3)], errors: [error(4), error(4), error(5)] })).toBe(4);
    expect(feedDataRows({ rows: [], errors: [] })).toBe(0);
  });

  it('is the number of distinct lines among the rows and the errors, an error on a row\'s line included (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 2, max: 60 })), fc.array(fc.integer({ min: 2, max: 60 })), (rowLines, errorLines) => {
        const count = feedDataRows({ rows: rowLines.map((line) => ({ line }) as never), errors: errorLines.map((line) => ({ line }) as never) });
        expect(count).toBe(new Set([...rowLines, ...errorLines]).size);
      }),
    );
  });
});

describe('TRAINSYNC_FEED_MIN_SHARE and feedMinShare', () => {
  it('reads "50%", "50" and 50; refuses anything else with the range', () => {
    expect([parseFeedMinShare('50%'), parseFeedMinShare(' 0 '), parseFeedMinShare(100), parseFeedMinShare('35 %')]).toEqual([50, 0, 100, 35]);
    for (const bad of ['101', '-1', 'half', '0.5', '']) expect(parseFeedMinShare(bad)).toMatch(/whole percentage from 0 to 100/);
  });

  it('defaults to 50%, is set by the variable, and per organisation by the orgs file', async () => {
    expect(loadConfig({}).orgs[0]?.feedMinShare).toBe(50);
    expect(loadConfig({ TRAINSYNC_FEED_MIN_SHARE: '80%' }).orgs[0]?.feedMinShare).toBe(80);
    expect(() => loadConfig({ TRAINSYNC_FEED_MIN_SHARE: 'most' })).toThrow(/TRAINSYNC_FEED_MIN_SHARE: got "most"; expected a whole percentage/);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'trainsync-share-'));
    try {
      const file = path.join(dir, 'orgs.json');
      const org = (slug: string, more: object = {}) => ({ slug, name: slug, apiUrl: 'https://t.example', apiKey: { env: 'K' }, ...more });
      await writeFile(file, JSON.stringify({ organisations: [org('north', { feedMinShare: '90%' }), org('south')] }));
      const config = loadConfig({ TRAINSYNC_ORGS_FILE: file, K: 'k', TRAINSYNC_FEED_MIN_SHARE: '20' });
      expect(config.orgs.map((o) => [o.slug, o.feedMinShare])).toEqual([['north', 90], ['south', 20]]);
      await writeFile(file, JSON.stringify({ organisations: [org('north', { feedMinShare: 150 })] }));
      expect(() => loadConfig({ TRAINSYNC_ORGS_FILE: file, K: 'k' })).toThrow(/organisations\[0\] \(north\): feedMinShare: a whole percentage from 0 to 100/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
