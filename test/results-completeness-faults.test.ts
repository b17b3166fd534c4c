import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { allResults, type SimulatorFaults } from '../src/simulator/index.ts';
import type { SyncPayload } from '../src/sync/sync-payload.ts';
import { fetchResultChanges, missingResults, warehouseResultIds } from './helpers/missing-results.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * What a results run promises while the platform changes under it: a run that ends
 * `succeeded` holds every result that was on the platform before it and still is after
 * it; otherwise it ends `incomplete`, naming the windows it may have missed. Results
 * arriving while it pages are never a reason to read again or to end incomplete.
 *
 * Each fault is run as (a) a first load: `sync results` into an empty warehouse, read by
 * closed date windows (80 pages in windows of about 10: eight of them, six at a time, each
 * one page at a time), the undated tail of the list without dates and the open window
 * (today), and (b) a windowed read: a `--since/--until` backfill of the data's year in
 * 30-day windows into an empty warehouse, several windows at a time, each read one page at
 * a time. The removal-and-arrival pair is also run as (c) a full walk: `--full` over a
 * warehouse a quiet first load filled. A fresh simulator of the same seed each time, so
 * the quiet runs' page counts hold for all.
 */

const SIZES = { results: 4_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' };
const ENV = { TRAINSYNC_RESULTS_WINDOW_DAYS: '30', TRAINSYNC_RESULTS_WALK_WINDOW_PAGES: '10' };

type Mode = 'first load' | 'full walk' | 'windowed read';
const MODES: Record<Mode, Partial<SyncPayload>> = {
  'first load': {},
  'full walk': { full: true },
  'windowed read': { since: '2024-01-01', until: '2024-12-31' },
};

const QUIET: Partial<SimulatorFaults> = { driftEvery: 0, driftCount: 1, arrivalsAt: 'tail', removeEvery: 0, removeLimit: 0, removeAt: 'served' };

interface Fault {
  name: string;
  faults: Partial<SimulatorFaults>;
  arrives: boolean;
  removes: boolean;
  /** Settings of this fault's windowed read. */
  windowEnv?: Record<string, string>;
  /** The runs it is tried in (default: a first load and a windowed read). */
  modes?: Mode[];
  /** The data's days, when not the year 2024's. */
  days?: { resultsFrom: string; resultsTo: string };
}

const DAY_MS = 86_400_000;
/** A month of results up to today: the open window (today) holds a few pages of them. */
const MONTH_TO_TODAY = { resultsFrom: new Date(Date.now() - 30 * DAY_MS).toISOString().slice(0, 10), resultsTo: new Date().toISOString().slice(0, 10) };

const FAULTS: Fault[] = [
  { name: 'arrivals at the head', faults: { driftEvery: 3, arrivalsAt: 'head' }, arrives: true, removes: false },
  { name: 'arrivals in the middle', faults: { driftEvery: 3, arrivalsAt: 'middle' }, arrives: true, removes: false },
  { name: 'arrivals at the tail', faults: { driftEvery: 3, arrivalsAt: 'tail' }, arrives: true, removes: false },
  { name: 'removals anywhere', faults: { removeEvery: 8, removeAt: 'anywhere' }, arrives: false, removes: true },
  /*
   * Both, never in the same interval between two page answers (the risk the rule
   * accepts: a removal behind the reader and an arrival there cancel out in the total).
   * A removal follows page 8k and arrivals precede pages 4j, never page 8k + 1 (pages
   * counted as the simulator serves them, of any query). The windows are read one at a
   * time: read together, their pages interleave, and a window's next page after a
   * removal could be the simulator's page 8k + 4, an arrival's.
   */
  {
    name: 'removals and arrivals',
    faults: { removeEvery: 8, removeAt: 'anywhere', driftEvery: 4, arrivalsAt: 'random' },
    arrives: true,
    removes: true,
    windowEnv: { TRAINSYNC_RESULTS_CONCURRENCY: '1' },
  },
  /*
   * The pair the rule cannot see in one list: after every third page served, a result the
   * reader has passed is deleted and another is completed now, ahead of it in a list of
   * oldest first, before the next page. Read by closed windows, the deletion shows in its
   * window's total and the completion lands in the open window, read last and read again.
   */
  {
    name: 'a removal behind the reader and a completion now, in one interval',
    faults: { pairEvery: 3 },
    arrives: true,
    removes: true,
    modes: ['first load', 'full walk', 'windowed read'],
  },
  /*
   * The same pair where it lands: in the open window, a few pages of today's results read
   * while the pairs come (one after every second page), so a pair falls between two of its
   * pages and hides a result from that read; the second read of the open window tells.
   */
  {
    name: 'the pair in the open window, a month of results up to today',
    faults: { pairEvery: 2 },
    arrives: true,
    removes: true,
    modes: ['first load', 'full walk'],
    days: MONTH_TO_TODAY,
  },
];

interface Outcome {
  status: string;
  pages: number;
  note: string | undefined;
  missing: string[];
  added: number;
  removed: number;
  unfinished: string[];
  /** Closed windows a first load or full walk read (0: walked whole). */
  windows: number;
}

/** One run in a fresh harness: the ids listed before it, the faults on while it runs, then what is missing. */
async function runWith(mode: Mode, fault: Pick<Fault, 'faults' | 'windowEnv' | 'days'>, keep: (h: SyncHarness) => void): Promise<Outcome> {
  const h = await createSyncHarness({ simulator: { sizes: { ...SIZES, ...fault.days } }, env: { ...ENV, ...(mode === 'windowed read' ? fault.windowEnv : {}) } });
  keep(h);
  if (mode === 'full walk') expect(summaryOf(await h.sync(['results']), 'results'), 'the quiet first load before the full walk').toMatchObject({ status: 'succeeded' });
  // Windows list dated results only (the data's days are all inside the backfill's).
  const before = allResults(h.sim.state)
    .filter((r) => mode !== 'windowed read' || r.dateCompleted !== null)
    .map((r) => r.id);
  h.sim.setFaults({ ...QUIET, ...fault.faults });
  const outcomes = await h.sync(['results'], MODES[mode]);
  // Read before the faults are set again, which starts a new record.
  const changes = await fetchResultChanges(h.sim.url);
  h.sim.setFaults(QUIET);
  const summary = summaryOf(outcomes, 'results');
  const stored = await warehouseResultIds(h.database.pool);
  const unfinished = await h.database.pool.query<{ window_key: string }>("select window_key from trainsync.unfinished_windows where resource = 'results' order by window_key");
  return {
    status: String(summary.status),
    pages: Number(summary.pages),
    note: summary.note === undefined ? undefined : String(summary.note),
    missing: missingResults(before, changes.removed, stored),
    added: changes.added.length,
    removed: changes.removed.length,
    unfinished: unfinished.rows.map((r) => r.window_key),
    windows: Number(summary.windows),
  };
}

describe('results runs under arrivals and removals: succeeded means nothing that stayed is missing', () => {
  let h: SyncHarness | undefined;
  const keep = (harness: SyncHarness): void => {
    h = harness;
  };
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const quietPages: Partial<Record<Mode, number>> = {};
  beforeAll(async () => {
    for (const mode of Object.keys(MODES) as Mode[]) {
      const quiet = await runWith(mode, { faults: {} }, keep);
      await h?.close();
      h = undefined;
      // The baseline itself: nothing changed, everything read once.
      expect(quiet, mode).toMatchObject({ status: 'succeeded', missing: [], added: 0, removed: 0 });
      // 80 pages in windows of about 10 pages: the walks read by windows, not whole.
      if (mode !== 'windowed read') expect(quiet.windows, mode).toBe(8);
      quietPages[mode] = quiet.pages;
    }
  });

  for (const fault of FAULTS) {
    for (const mode of fault.modes ?? (['first load', 'windowed read'] as const)) {
      it(`${fault.name}, ${mode}`, async () => {
        const run = await runWith(mode, fault, keep);
        const label = `${fault.name}, ${mode}: ${JSON.stringify({ ...run, missing: run.missing.length })}`;
        // The fault did happen.
        if (fault.arrives) expect(run.added, label).toBeGreaterThan(0);
        if (fault.removes) expect(run.removed, label).toBeGreaterThan(0);

        // Succeeded ⇒ every result that was there before and still is after is stored.
        if (run.status === 'succeeded') expect(run.missing, label).toEqual([]);

        if (!fault.removes) {
          // Arrivals alone: no gap, nothing read again beyond the pages they add.
          expect(run.status, label).toBe('succeeded');
          expect(run.pages, label).toBeLessThanOrEqual(1.1 * quietPages[mode]! + 2);
        } else if (run.status !== 'succeeded') {
          // Otherwise incomplete, naming what the next run must read again.
          expect(run.status, label).toBe('incomplete');
          expect(run.unfinished.length, label).toBeGreaterThan(0);
          for (const key of run.unfinished.slice(0, 5)) expect(run.note, label).toContain(key);
          if (mode === 'windowed read') for (const key of run.unfinished) expect(key, label).toMatch(/^\d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2}$/);
          // A first load names the windows the next run reads again (the whole walk only if the undated results were not proven read).
          if (mode === 'first load') for (const key of run.unfinished) expect(key, label).toMatch(/^(\d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2}|full)$/);
        }
      });
    }
  }
});
