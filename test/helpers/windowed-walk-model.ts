import fc from 'fast-check';
import { CompletenessRule, type Verdict } from '../../src/sync/results/completeness.ts';
import { openWindowStep, type WindowRead } from '../../src/sync/results/open-window.ts';

/**
 * A first load or full walk by windows, in memory, driving the real decisions (the
 * completeness rule for each read, openWindowStep for the open window) the way
 * windowed-walk.ts does: closed windows several at once, each one page at a time; then
 * the open window, read, read again, and read a third time when the two differ. Between
 * any two services the lists change: a completion recorded late lands anywhere in a
 * closed window, a completion now lands in the open window, a result is removed from
 * any window; and the process may die (a closed window already proven read stays done;
 * the others, and the open window, are read again from the start).
 */

export type WindowOp =
  | { kind: 'serve'; pick: number }
  | { kind: 'deliver'; pick: number }
  /** A completion recorded late: dated back into closed window `window`, anywhere in it. */
  | { kind: 'late'; window: number; at: number }
  /** A completion now: in the open window, at its newest end or (recorded a little late) anywhere in it. */
  | { kind: 'now'; at: number; anywhere: boolean }
  | { kind: 'remove'; window: number; at: number }
  | { kind: 'restart' };

export interface WindowScenario {
  /** Results per window, the last one the open window. */
  sizes: number[];
  pageSize: number;
  /** Closed windows read at once. */
  concurrency: number;
  ops: WindowOp[];
  /** Taken instead of what is left of `ops` once the open window's first read begins (it is read last). */
  openOps: WindowOp[];
}

export interface ModelOptions {
  /** Read the open window a second time (and a third when they differ); false: once, as a closed window. */
  confirmOpen: boolean;
  /** Read every window as one list instead (oldest first, one page at a time): the walk before windows. */
  oneList?: boolean;
}

export interface WindowOutcome {
  complete: boolean;
  finished: boolean;
  /** Results listed when the walk began and never removed, never read. */
  missing: Array<{ id: number; window: number }>;
  /** Closed windows one of whose reads had a removal and an arrival in that window between two of its services. */
  mixedClosed: Set<number>;
  /** Such intervals in all reads of the open window. */
  mixedOpen: number;
  /** Reads of the open window that counted (after the last restart). */
  openReads: number;
  late: number;
  now: number;
  removals: number;
  /** Pages read more than once, in closed windows. */
  rereadClosed: number;
}

interface Service {
  seq: number;
  ids: number[];
  total: number;
  arrivals: number;
  removals: number;
}

interface Reader {
  window: number;
  rule: CompletenessRule;
  request?: { page: number; served?: Service } | undefined;
  services: Service[];
  totals: number[];
  ids: Set<number>;
}

const MAX_STEPS = 20_000;

export function runWindowScenario(scenario: WindowScenario, options: ModelOptions = { confirmOpen: true }): WindowOutcome {
  const { pageSize } = scenario;
  const open = scenario.sizes.length - 1;
  let nextId = 0;
  const lists = scenario.sizes.map((size) => Array.from({ length: size }, () => nextId++));
  const windowOf = new Map<number, number>();
  lists.forEach((list, w) => list.forEach((id) => windowOf.set(id, w)));
  const initial = new Set(windowOf.keys());
  const arrivals = lists.map(() => 0);
  const removals = lists.map(() => 0);
  const removed = new Set<number>();
  const read = new Set<number>();
  const closedDone = new Map<number, Verdict>();
  const mixedClosed = new Set<number>();
  let mixedOpen = 0;
  const pageReads = new Map<string, number>();
  let seq = 0;
  let late = 0;
  let now = 0;

  /** Window -1: every window as one list. */
  const ONE_LIST = -1;
  let pending = options.oneList ? [ONE_LIST] : Array.from({ length: open }, (_, w) => w);
  let active: Reader[] = [];
  const listOf = (window: number): number[] => (window === ONE_LIST ? lists.flat() : lists[window]!);
  const sum = (counts: number[]): number => counts.reduce((a, b) => a + b, 0);
  let openReads: WindowRead[] = [];
  let openReader: Reader | undefined;
  let openVerdict: 'complete' | 'incomplete' | undefined;

  const newReader = (window: number): Reader => ({ window, rule: new CompletenessRule({ readAhead: 1 }), services: [], totals: [], ids: new Set() });
  const mixedIn = (reader: Reader): number => {
    let count = 0;
    for (let i = 1; i < reader.services.length; i++) {
      const a = reader.services[i - 1]!;
      const b = reader.services[i]!;
      if (b.arrivals > a.arrivals && b.removals > a.removals) count++;
    }
    return count;
  };
  const retire = (reader: Reader): void => {
    const mixed = mixedIn(reader);
    if (reader.window === open) mixedOpen += mixed;
    else if (mixed > 0) mixedClosed.add(reader.window);
  };
  const readers = (): Reader[] => [...active, ...(openReader ? [openReader] : [])];
  const fill = (): void => {
    while (active.length < scenario.concurrency && pending.length > 0) active.push(newReader(pending.shift()!));
    if (options.oneList && active.length === 0 && pending.length === 0) {
      openVerdict = closedDone.get(ONE_LIST)?.kind === 'complete' ? 'complete' : 'incomplete';
    }
    if (active.length === 0 && pending.length === 0 && openReader === undefined && openVerdict === undefined) {
      const step = options.confirmOpen ? openWindowStep(openReads) : openReads.length === 0 ? { kind: 'read' as const } : openReads[0]!.verdict.kind === 'complete' ? { kind: 'complete' as const } : { kind: 'incomplete' as const, reason: '' };
      if (step.kind === 'read') openReader = newReader(open);
      else openVerdict = step.kind;
    }
    for (const reader of readers()) {
      if (reader.request === undefined && reader.rule.state.kind === 'reading') {
        const page = reader.rule.ask();
        if (page !== undefined) reader.request = { page };
      }
    }
  };

  // One list meets the same changes, in the same order, as the windows do.
  let ops = options.oneList ? [...scenario.ops, ...scenario.openOps] : scenario.ops;
  let opIndex = 0;
  for (let steps = 0; steps < MAX_STEPS; steps++) {
    fill();
    if (openVerdict !== undefined) break;
    if (openReader !== undefined && ops === scenario.ops) {
      ops = scenario.openOps;
      opIndex = 0;
    }
    const live = readers().filter((r) => r.request !== undefined);
    const op: WindowOp = opIndex < ops.length ? ops[opIndex++]! : { kind: live.some((r) => r.request!.served) ? 'deliver' : 'serve', pick: 0 };
    if (op.kind === 'late') {
      if (open === 0) continue;
      const w = op.window % open;
      lists[w]!.splice(op.at % (lists[w]!.length + 1), 0, nextId);
      windowOf.set(nextId++, w);
      arrivals[w]!++;
      late++;
    } else if (op.kind === 'now') {
      const list = lists[open]!;
      list.splice(op.anywhere ? op.at % (list.length + 1) : list.length, 0, nextId);
      windowOf.set(nextId++, open);
      arrivals[open]!++;
      now++;
    } else if (op.kind === 'remove') {
      const w = op.window % lists.length;
      const list = lists[w]!;
      if (list.length === 0) continue;
      removed.add(list.splice(op.at % list.length, 1)[0]!);
      removals[w]!++;
    } else if (op.kind === 'restart') {
      // Windows proven read keep their checkpoint; the rest, and the open window, start again.
      for (const reader of readers()) retire(reader);
      pending = [...active.map((r) => r.window), ...pending];
      active = [];
      openReader = undefined;
      openReads = [];
    } else if (op.kind === 'serve') {
      const waiting = live.filter((r) => !r.request!.served);
      if (waiting.length === 0) continue;
      const reader = waiting[op.pick % waiting.length]!;
      const list = listOf(reader.window);
      const from = (reader.request!.page - 1) * pageSize;
      const one = reader.window === ONE_LIST;
      reader.request!.served = {
        seq: ++seq,
        ids: list.slice(from, from + pageSize),
        total: list.length,
        arrivals: one ? sum(arrivals) : arrivals[reader.window]!,
        removals: one ? sum(removals) : removals[reader.window]!,
      };
    } else {
      const served = live.filter((r) => r.request!.served);
      if (served.length === 0) continue;
      const reader = served[op.pick % served.length]!;
      const { page, served: answer } = reader.request!;
      reader.request = undefined;
      for (const id of answer!.ids) {
        read.add(id);
        reader.ids.add(id);
      }
      reader.services.push(answer!);
      reader.totals.push(answer!.total);
      if (reader.window !== open) pageReads.set(`${reader.window}:${page}`, (pageReads.get(`${reader.window}:${page}`) ?? 0) + 1);
      const verdict = reader.rule.answered(page, answer!.total, answer!.ids.length);
      if (verdict.kind === 'reading') continue;
      retire(reader);
      if (reader.window === open) {
        openReads.push({ verdict: verdict.kind === 'complete' ? { kind: 'complete' } : verdict, totals: reader.totals, ids: new Set([...reader.ids].map(String)) });
        openReader = undefined;
      } else {
        closedDone.set(reader.window, verdict);
        active = active.filter((r) => r !== reader);
      }
    }
  }

  const finished = openVerdict !== undefined;
  const complete = finished && openVerdict === 'complete' && [...closedDone.values()].every((v) => v.kind === 'complete');
  const missing = [...initial].filter((id) => !removed.has(id) && !read.has(id)).map((id) => ({ id, window: windowOf.get(id)! }));
  let rereadClosed = 0;
  for (const count of pageReads.values()) rereadClosed += count - 1;
  return { complete, finished, missing, mixedClosed, mixedOpen, openReads: openReads.length, late, now, removals: removed.size, rereadClosed };
}

export interface WindowShape {
  late: boolean;
  now: boolean;
  removals: boolean;
  restarts: boolean;
  /** At most this many changes in all. */
  maxChanges?: number;
}

/** Walks of 1 to 4 closed windows and an open one, read 1 to 3 windows at once, with the changes the shape allows. */
export function windowScenarios(shape: WindowShape): fc.Arbitrary<WindowScenario> {
  const weighted: Array<{ arbitrary: fc.Arbitrary<WindowOp>; weight: number }> = [
    { arbitrary: fc.record({ kind: fc.constant('serve' as const), pick: fc.nat(8) }), weight: 4 },
    { arbitrary: fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat(8) }), weight: 4 },
  ];
  if (shape.late) weighted.push({ arbitrary: fc.record({ kind: fc.constant('late' as const), window: fc.nat(8), at: fc.nat(200) }), weight: 2 });
  if (shape.now) weighted.push({ arbitrary: fc.record({ kind: fc.constant('now' as const), at: fc.nat(200), anywhere: fc.boolean() }), weight: 2 });
  if (shape.removals) weighted.push({ arbitrary: fc.record({ kind: fc.constant('remove' as const), window: fc.nat(8), at: fc.nat(200) }), weight: 2 });
  if (shape.restarts) weighted.push({ arbitrary: fc.constant({ kind: 'restart' as const }), weight: 1 });
  const isChange = (op: WindowOp): boolean => op.kind === 'late' || op.kind === 'now' || op.kind === 'remove';
  const changes = (ops: WindowOp[]): number => ops.filter(isChange).length;
  const ops = (maxLength: number): fc.Arbitrary<WindowOp[]> => fc.array(fc.oneof(...weighted), { maxLength });
  return fc
    .record({
      sizes: fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 2, maxLength: 5 }),
      pageSize: fc.integer({ min: 1, max: 5 }),
      concurrency: fc.integer({ min: 1, max: 3 }),
      ops: ops(160),
      openOps: ops(60),
    })
    .filter((s) => changes(s.ops) + changes(s.openOps) <= (shape.maxChanges ?? Infinity));
}
