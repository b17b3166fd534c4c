import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * What a night's results job costs Postgres in transactions when nothing is new: one to
 * plan and start the run (the plan's reads, the windows' checkpoints and date bounds inside
 * the run's start), one per window for its closing batch (no order lock: nothing commits
 * after it), and one to close. Counted as the scoped BEGINs trainsync's own
 * connections send (every statement still goes to the real Postgres; the count only
 * watches pg's client).
 */

const DAY_MS = 86_400_000;
const day = (offset: number): string => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);

describe("a results job's transactions on a night with nothing new", () => {
  let h: SyncHarness;
  const original = pg.Client.prototype.query;
  let sent: string[] = [];

  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 300, users: 20, courses: 5, resultsFrom: day(-30), resultsTo: day(-1) } },
      env: { TRAINSYNC_RESULTS_LOOKBACK: 'P1W', TRAINSYNC_RESULTS_WINDOW_DAYS: '3' },
    });
  });
  afterEach(() => {
    pg.Client.prototype.query = original;
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Watches the text of every statement any pg client of this process sends. */
  const watch = (): void => {
    sent = [];
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0];
      const text = typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text;
      if (typeof text === 'string') sent.push(text);
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof original;
  };

  it('plans and starts the run and reads its windows\' state in one transaction, and closes each window without an order lock', async () => {
    expect(summaryOf(await h.sync(['results']), 'results')).toMatchObject({ mode: 'full', status: 'succeeded' });

    watch();
    const night = summaryOf(await h.sync(['results']), 'results');
    pg.Client.prototype.query = original;
    expect(night).toMatchObject({ mode: 'incremental', status: 'succeeded', inserted: 0, updated: 0 });
    const windows = Number(night.windows);
    // Seven days and today in windows of three days: three, or four across midnight.
    expect(windows).toBeGreaterThanOrEqual(3);

    const scopedBegins = sent.filter((text) => /^begin; select set_config\('role'/.test(text)).length;
    // Plan, start and the windows' state; a closing batch per window; the close.
    expect(scopedBegins).toBe(windows + 2);
    // No window's closing batch asks for an order lock (a successor's wait): none comes after it.
    expect(sent.filter((text) => text.includes('pg_advisory_xact_lock($1, $2), txid_current()'))).toHaveLength(0);
    // The plan's reads went in the transaction that started the run: the watermark is read
    // between a BEGIN and the run's insert, with no BEGIN between them.
    const watermark = sent.findIndex((text) => text.includes('"trainsync"."watermarks"'));
    const insert = sent.findIndex((text) => /insert into "trainsync"\."runs"/.test(text));
    expect(watermark).toBeGreaterThan(-1);
    expect(insert).toBeGreaterThan(watermark);
    expect(sent.slice(watermark, insert).filter((text) => text.startsWith('begin'))).toHaveLength(0);
    // And the windows' checkpoints of an earlier attempt, read in that same transaction.
    const checkpoints = sent.findIndex((text) => /^select "key" from "trainsync"\."checkpoints"/.test(text));
    expect(checkpoints).toBeGreaterThan(watermark);
    expect(checkpoints).toBeLessThan(insert);
  });
});
