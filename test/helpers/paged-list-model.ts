import fc from 'fast-check';
import { CompletenessRule, type ReadCheckpoint, type Verdict } from '../../src/sync/results/completeness.ts';

/**
 * An in-memory list read page by page while it changes, driving the completeness rule
 * the way the walk does: pages asked for, served from the list as it is at that moment,
 * answered in the order the scheduler picks, with insertions and removals anywhere in
 * between, and restarts that resume from the rule's checkpoint.
 */

export type Where = 'head' | 'tail' | 'anywhere';

export type Op =
  | { kind: 'serve'; pick: number }
  | { kind: 'deliver'; pick: number }
  | { kind: 'insert'; where: Where; at: number }
  | { kind: 'remove'; at: number }
  | { kind: 'restart' };

export interface Scenario {
  size: number;
  pageSize: number;
  readAhead: number;
  /** Pages served and answered in any order (read ahead), or first asked, first served. */
  outOfOrder: boolean;
  ops: Op[];
}

/** The rule's surface the model drives; a broken rule can stand in to show the model catches it. */
export interface RuleUnderTest {
  ask(): number | undefined;
  answered(page: number, total: number | undefined, size: number): Verdict;
  checkpoint(): ReadCheckpoint | undefined;
}

export type RuleFactory = (readAhead: number, resume: ReadCheckpoint | undefined) => RuleUnderTest;

export const realRule: RuleFactory = (readAhead, resume) => new CompletenessRule({ readAhead, quietBeforeReadAhead: 6, resume });

export interface Outcome {
  verdict: Verdict;
  /** Results listed when the read began and still listed at its last service, never read. */
  missing: number[];
  /** Some interval between two services in a row held a removal and an arrival. */
  mixed: boolean;
  reads: number;
  /** Pages read more than once. */
  reread: number;
  arrivals: number;
  removals: number;
  finished: boolean;
}

interface Request {
  page: number;
  generation: number;
  served?: { seq: number; ids: number[]; total: number; arrivals: number; removals: number };
}

const MAX_STEPS = 20_000;

export function runScenario(scenario: Scenario, factory: RuleFactory = realRule): Outcome {
  const { pageSize } = scenario;
  let nextId = 0;
  const list: number[] = Array.from({ length: scenario.size }, () => nextId++);
  const initial = new Set(list);
  const removedOrder: number[] = [];
  let arrivals = 0;
  let serveSeq = 0;
  let generation = 0;
  let rule = factory(scenario.readAhead, undefined);
  let verdict: Verdict = { kind: 'reading' };
  const requests: Request[] = [];
  const read = new Set<number>();
  const pageReads = new Map<number, number>();
  const fedServices: Array<NonNullable<Request['served']>> = [];
  let reads = 0;
  let opIndex = 0;

  const serve = (request: Request): void => {
    const from = (request.page - 1) * pageSize;
    request.served = { seq: ++serveSeq, ids: list.slice(from, from + pageSize), total: list.length, arrivals, removals: removedOrder.length };
  };

  for (let step = 0; step < MAX_STEPS; step++) {
    if (verdict.kind === 'reading') {
      for (let page = rule.ask(); page !== undefined; page = rule.ask()) requests.push({ page, generation });
    }
    const live = requests.filter((r) => r.generation === generation);
    if (verdict.kind !== 'reading') break;
    const op: Op = opIndex < scenario.ops.length ? scenario.ops[opIndex++]! : { kind: live.some((r) => r.served) ? 'deliver' : 'serve', pick: 0 };
    if (op.kind === 'insert') {
      const at = op.where === 'head' ? 0 : op.where === 'tail' ? list.length : op.at % (list.length + 1);
      list.splice(at, 0, nextId++);
      arrivals++;
    } else if (op.kind === 'remove') {
      if (list.length > 0) removedOrder.push(list.splice(op.at % list.length, 1)[0]!);
    } else if (op.kind === 'restart') {
      // The process dies: what was in flight is never answered; the next one resumes.
      generation++;
      rule = factory(scenario.readAhead, rule.checkpoint());
    } else if (op.kind === 'serve') {
      const waiting = live.filter((r) => !r.served);
      if (waiting.length > 0) serve(waiting[scenario.outOfOrder ? op.pick % waiting.length : 0]!);
    } else {
      const served = live.filter((r) => r.served);
      if (served.length === 0) continue;
      const request = served[scenario.outOfOrder ? op.pick % served.length : 0]!;
      requests.splice(requests.indexOf(request), 1);
      const answer = request.served!;
      for (const id of answer.ids) read.add(id);
      fedServices.push(answer);
      reads++;
      pageReads.set(request.page, (pageReads.get(request.page) ?? 0) + 1);
      verdict = rule.answered(request.page, answer.total, answer.ids.length);
    }
  }

  // The read ends at the latest service it used; what was removed by then is not required.
  fedServices.sort((a, b) => a.seq - b.seq);
  const last = fedServices.at(-1);
  const gone = new Set(removedOrder.slice(0, last?.removals ?? 0));
  const missing = [...initial].filter((id) => !gone.has(id) && !read.has(id));
  let mixed = false;
  for (let i = 1; i < fedServices.length; i++) {
    const a = fedServices[i - 1]!;
    const b = fedServices[i]!;
    if (b.arrivals > a.arrivals && b.removals > a.removals) mixed = true;
  }
  let reread = 0;
  for (const count of pageReads.values()) reread += count - 1;
  return { verdict, missing, mixed, reads, reread, arrivals, removals: removedOrder.length, finished: verdict.kind !== 'reading' };
}

export interface ScenarioShape {
  arrivals: Where[] | 'none';
  removals: boolean;
  readAhead: number[];
  outOfOrder: boolean[];
  restarts: boolean;
  maxChanges?: number;
}

/** Scenarios of one shape: which changes may happen, how pages are read. */
export function scenarios(shape: ScenarioShape): fc.Arbitrary<Scenario> {
  const progress = [
    fc.record({ kind: fc.constant('serve' as const), pick: fc.nat(8) }),
    fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat(8) }),
  ];
  const changes: Array<fc.Arbitrary<Op>> = [];
  if (shape.arrivals !== 'none') {
    changes.push(fc.record({ kind: fc.constant('insert' as const), where: fc.constantFrom(...shape.arrivals), at: fc.nat(200) }));
  }
  if (shape.removals) changes.push(fc.record({ kind: fc.constant('remove' as const), at: fc.nat(200) }));
  const weighted: Array<{ arbitrary: fc.Arbitrary<Op>; weight: number }> = progress.map((arbitrary) => ({ arbitrary, weight: 4 }));
  for (const arbitrary of changes) weighted.push({ arbitrary, weight: 2 });
  if (shape.restarts) weighted.push({ arbitrary: fc.constant({ kind: 'restart' as const }), weight: 1 });
  const ops = fc.array(fc.oneof(...weighted), { maxLength: 120 }).filter((list) => list.filter((op) => op.kind === 'insert' || op.kind === 'remove').length <= (shape.maxChanges ?? Infinity));
  return fc.record({
    size: fc.integer({ min: 0, max: 40 }),
    pageSize: fc.integer({ min: 1, max: 6 }),
    readAhead: fc.constantFrom(...shape.readAhead),
    outOfOrder: fc.constantFrom(...shape.outOfOrder),
    ops,
  });
}
