import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CompletenessRule, mostRemovals, type ReadCheckpoint, type Verdict } from '../src/sync/results/completeness.ts';
import { runScenario, scenarios, type RuleFactory, type Scenario } from './helpers/paged-list-model.ts';
import { runWindowScenario, windowScenarios, type WindowScenario } from './helpers/windowed-walk-model.ts';

/**
 * The completeness rule against a generated model of a list that changes while it is
 * read (test/helpers/paged-list-model.ts): every order of arrivals (head, tail,
 * anywhere: newest first, oldest first, by id), removals anywhere, pages read one at a
 * time or ahead and answered in any order, restarts from the checkpoint.
 */

const RUNS = Number(process.env.COMPLETENESS_RUNS ?? 3_000);
const everywhere = ['head', 'tail', 'anywhere'] as const;

function describeRun(scenario: Scenario): string {
  const outcome = runScenario(scenario);
  return JSON.stringify({ ...outcome, missing: outcome.missing.slice(0, 10) });
}

describe('the completeness rule against a model of a changing list', () => {
  it('never says complete while a result listed throughout is missing (one removal or arrival per interval at most)', () => {
    fc.assert(
      fc.property(scenarios({ arrivals: [...everywhere], removals: true, readAhead: [1, 2, 3, 4], outOfOrder: [false, true], restarts: true }), (scenario) => {
        const outcome = runScenario(scenario);
        expect(outcome.finished, describeRun(scenario)).toBe(true);
        // The one stated residual risk: a removal and an arrival between the same two services.
        if (outcome.verdict.kind === 'complete' && !outcome.mixed) expect(outcome.missing, describeRun(scenario)).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it('arrivals alone, one page at a time: complete, and no page read twice', () => {
    fc.assert(
      fc.property(scenarios({ arrivals: [...everywhere], removals: false, readAhead: [1], outOfOrder: [false], restarts: false }), (scenario) => {
        const outcome = runScenario(scenario);
        expect(outcome.verdict, describeRun(scenario)).toEqual({ kind: 'complete' });
        expect(outcome.missing).toEqual([]);
        expect(outcome.reread, describeRun(scenario)).toBe(0);
      }),
      { numRuns: RUNS },
    );
  });

  it('arrivals alone, read ahead and answered in any order: complete with nothing missing', () => {
    fc.assert(
      fc.property(scenarios({ arrivals: [...everywhere], removals: false, readAhead: [2, 3, 4], outOfOrder: [true, false], restarts: true }), (scenario) => {
        const outcome = runScenario(scenario);
        expect(outcome.verdict, describeRun(scenario)).toEqual({ kind: 'complete' });
        expect(outcome.missing, describeRun(scenario)).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it('a few removals anywhere: complete after bounded re-reads, nothing missing', () => {
    fc.assert(
      fc.property(scenarios({ arrivals: 'none', removals: true, readAhead: [1, 2, 4], outOfOrder: [false, true], restarts: true, maxChanges: 4 }), (scenario) => {
        const outcome = runScenario(scenario);
        expect(outcome.verdict, describeRun(scenario)).toEqual({ kind: 'complete' });
        expect(outcome.missing, describeRun(scenario)).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it('removals faster than the reader: ends incomplete, naming how far it got, within the cap', () => {
    // Every answer is followed by a removal at the head: the list empties behind the reader.
    const ops = Array.from({ length: 400 }, (_, i) => (i % 3 === 2 ? { kind: 'remove' as const, at: 0 } : { kind: i % 3 === 0 ? ('serve' as const) : ('deliver' as const), pick: 0 }));
    const outcome = runScenario({ size: 300, pageSize: 5, readAhead: 1, outOfOrder: false, ops });
    expect(outcome.finished).toBe(true);
    if (outcome.verdict.kind === 'complete') expect(outcome.missing).toEqual([]);
    else expect(outcome.verdict).toMatchObject({ kind: 'incomplete', reason: expect.stringContaining('not proven read') });
    expect(outcome.reads).toBeLessThanOrEqual(3 * 60 + 4);
  });

  it('the model finds the hole in the plain walk (pages 1 to the last the total names), and shrinks it', () => {
    // What a careful script does without the rule: page by page until the page the total ends on.
    const plain: RuleFactory = () => {
      let next = 1;
      let waiting = false;
      let verdict: Verdict = { kind: 'reading' };
      let pageSize = 0;
      return {
        ask: () => {
          if (waiting || verdict.kind !== 'reading') return undefined;
          waiting = true;
          return next;
        },
        checkpoint: (): ReadCheckpoint | undefined => undefined,
        answered: (page: number, total: number | undefined, size: number): Verdict => {
          waiting = false;
          pageSize = Math.max(pageSize, size);
          if (size === 0 || page * pageSize >= (total ?? 0)) verdict = { kind: 'complete' };
          next = page + 1;
          return verdict;
        },
      };
    };
    const result = fc.check(
      fc.property(scenarios({ arrivals: 'none', removals: true, readAhead: [1], outOfOrder: [false], restarts: false }), (scenario) => {
        const outcome = runScenario(scenario, plain);
        return outcome.verdict.kind !== 'complete' || outcome.missing.length === 0;
      }),
      { numRuns: RUNS, seed: 1 },
    );
    expect(result.failed).toBe(true);
    const counterexample = result.counterexample?.[0];
    expect(counterexample).toBeDefined();
    // Shrunk to a handful of steps: a removal behind the reader between two pages.
    expect(counterexample!.ops.length).toBeLessThan(12);
    expect(runScenario(counterexample!, plain).missing.length).toBeGreaterThan(0);
    // The same run under the rule: complete with nothing missing, or honest.
    const ruled = runScenario(counterexample!);
    if (ruled.verdict.kind === 'complete') expect(ruled.missing).toEqual([]);
    if (process.env.COMPLETENESS_SHOW) process.stderr.write(`counterexample: ${JSON.stringify(counterexample)}\nplain: ${JSON.stringify(runScenario(counterexample!, plain))}\nrule: ${JSON.stringify(ruled)}\n`);
  });

  it('generates runs that matter: removals behind the reader, reads ahead out of order, restarts', () => {
    const shape = scenarios({ arrivals: [...everywhere], removals: true, readAhead: [1, 2, 3, 4], outOfOrder: [false, true], restarts: true });
    const samples = fc.sample(shape, { numRuns: 500, seed: 7 }).map((scenario) => runScenario(scenario));
    expect(samples.filter((o) => o.reread > 0).length).toBeGreaterThan(50);
    expect(samples.filter((o) => o.removals > 0 && o.arrivals > 0).length).toBeGreaterThan(50);
    expect(samples.filter((o) => o.verdict.kind === 'complete' && o.reads > 3).length).toBeGreaterThan(50);
  });
});

function describeWindows(scenario: WindowScenario): string {
  const outcome = runWindowScenario(scenario);
  return JSON.stringify({ ...outcome, mixedClosed: [...outcome.mixedClosed], missing: outcome.missing.slice(0, 10) });
}

describe('a first load or full walk by windows against a model of windows that change while they are read', () => {
  const everything = { late: true, now: true, removals: true, restarts: true };

  it('never says complete while a result listed throughout is missing, but where a stated risk was taken', () => {
    fc.assert(
      fc.property(windowScenarios(everything), (scenario) => {
        const outcome = runWindowScenario(scenario);
        expect(outcome.finished, describeWindows(scenario)).toBe(true);
        const open = scenario.sizes.length - 1;
        if (!outcome.complete) return;
        for (const m of outcome.missing) {
          if (m.window === open) expect(outcome.mixedOpen, describeWindows(scenario)).toBeGreaterThanOrEqual(3);
          else expect(outcome.mixedClosed.has(m.window), describeWindows(scenario)).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('late-recorded arrivals and completions now, no removals: complete, nothing missing, no closed page read twice, the open window read two or three times', () => {
    fc.assert(
      fc.property(windowScenarios({ late: true, now: true, removals: false, restarts: false }), (scenario) => {
        const outcome = runWindowScenario(scenario);
        expect(outcome.complete, describeWindows(scenario)).toBe(true);
        expect(outcome.missing).toEqual([]);
        expect(outcome.rereadClosed, describeWindows(scenario)).toBe(0);
        expect([2, 3], describeWindows(scenario)).toContain(outcome.openReads);
      }),
      { numRuns: RUNS },
    );
  });

  it('a few removals anywhere, several windows at once, restarts: complete with nothing missing', () => {
    fc.assert(
      fc.property(windowScenarios({ late: false, now: false, removals: true, restarts: true, maxChanges: 4 }), (scenario) => {
        const outcome = runWindowScenario(scenario);
        expect(outcome.complete, describeWindows(scenario)).toBe(true);
        expect(outcome.missing, describeWindows(scenario)).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it('the same changes lose fewer results by windows than in one list, and none in the open window once it is read again (measured)', () => {
    const runs = fc.sample(windowScenarios({ late: true, now: true, removals: true, restarts: false }), { numRuns: RUNS, seed: 11 });
    const tally = (confirmOpen: boolean, oneList = false): { complete: number; lost: number; lostClosed: number; lostOpen: number; mixedClosed: number } => {
      const t = { complete: 0, lost: 0, lostClosed: 0, lostOpen: 0, mixedClosed: 0 };
      for (const scenario of runs) {
        const outcome = runWindowScenario(scenario, { confirmOpen, oneList });
        if (outcome.mixedClosed.size > 0) t.mixedClosed += 1;
        if (!outcome.complete) continue;
        t.complete += 1;
        if (outcome.missing.length > 0) t.lost += 1;
        const open = scenario.sizes.length - 1;
        if (outcome.missing.some((m) => m.window !== open)) t.lostClosed += 1;
        if (outcome.missing.some((m) => m.window === open)) t.lostOpen += 1;
      }
      return t;
    };
    const oneList = tally(false, true);
    const once = tally(false);
    const again = tally(true);
    if (process.env.COMPLETENESS_SHOW) process.stderr.write(`windows: ${runs.length} runs; one list: ${JSON.stringify(oneList)}; by windows, open window read once: ${JSON.stringify(once)}; read again: ${JSON.stringify(again)}\n`);
    expect(again.lost).toBeLessThan(oneList.lost);
    expect(once.lostOpen).toBeGreaterThan(0);
    expect(again.lostOpen).toBe(0);
    // Closed windows are read the same way both times: what they lose is the stated risk.
    expect(again.lostClosed).toBe(once.lostClosed);
  });

  it('generates runs that matter: windows read at once, late-recorded arrivals behind the reader, removals, a changed open window', () => {
    const samples = fc.sample(windowScenarios(everything), { numRuns: 500, seed: 7 }).map((scenario) => ({ scenario, outcome: runWindowScenario(scenario) }));
    expect(samples.filter(({ scenario }) => scenario.concurrency > 1 && scenario.sizes.length > 2).length).toBeGreaterThan(100);
    expect(samples.filter(({ outcome }) => outcome.late > 0 && outcome.removals > 0).length).toBeGreaterThan(50);
    expect(samples.filter(({ outcome }) => outcome.openReads === 3).length).toBeGreaterThan(20);
    expect(samples.filter(({ outcome }) => outcome.mixedClosed.size > 0).length).toBeGreaterThan(2);
  });
});

describe('mostRemovals: what uncertain totals can hide', () => {
  it('is the fall when nothing is uncertain, and zero for a rise', () => {
    expect(mostRemovals(10, [], 7)).toBe(3);
    expect(mostRemovals(10, [], 12)).toBe(0);
  });

  it('bounds the falls of every order of the middle totals', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 50 }), fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 6 }), fc.integer({ min: 0, max: 50 }), (from, middle, to) => {
        const bound = mostRemovals(from, middle, to);
        for (const order of permutations(middle)) {
          let falls = 0;
          const path = [from, ...order, to];
          for (let i = 1; i < path.length; i++) falls += Math.max(0, path[i - 1]! - path[i]!);
          expect(falls).toBeLessThanOrEqual(bound);
        }
      }),
      { numRuns: 300 },
    );
  });
});

function* permutations(items: readonly number[]): Generator<number[]> {
  if (items.length <= 1) {
    yield [...items];
    return;
  }
  for (let i = 0; i < items.length; i++) {
    const rest = [...items.slice(0, i), ...items.slice(i + 1)];
    for (const tail of permutations(rest)) yield [items[i]!, ...tail];
  }
}
