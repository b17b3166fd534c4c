import { ATTR, type SpanAttributes } from '../lib/tracing/attributes.ts';
import { captureContext, inBatchSpan, type TraceContext } from '../lib/tracing/spans.ts';

/**
 * Group commit for SCIM changes: requests that arrive while a batch is being written
 * wait for the next one, so a burst of 1,000 creates costs a handful of inserts,
 * snapshots and enqueues rather than 1,000 serialised ones (and 1,000 waits for a pooled
 * connection, which is what kept a burst's answers seconds late). Each caller's promise settles when its
 * own batch is durable. One change per key (employee) per batch: a second change of the
 * same employee goes in the next batch, in arrival order.
 */
export interface Batcher<T, R> {
  /** Settles with the item's own result, once its whole batch is durable. */
  submit(item: T): Promise<R>;
  /** Resolves once nothing is queued or running. */
  idle(): Promise<void>;
  /** Items submitted and not settled yet (waiting or in a running batch). */
  backlog(): number;
}

interface Entry<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
  /** The trace the item was submitted in (traces on): its batch's span continues it. */
  origin: TraceContext | undefined;
}

export interface BatcherOptions {
  /** Batches running at once (default 2). */
  concurrency?: number;
  /**
   * Whether a failed batch is split to find the entries that fail (default: always). False
   * for an outage (the database is down): every half would fail alike, so the batch fails whole.
   */
  split?: (error: unknown) => boolean;
  /**
   * Traces on: each run is a span of this name, a child of its first item's trace and linked
   * to the others' (one batch plans the changes of many requests).
   */
  span?: { name: string; attributes: SpanAttributes };
}

/**
 * `concurrency` batches may run at once (one snapshotting while another plans: each step
 * has its own lock); an employee is never in two at once. A batch that fails is split in
 * halves, each run on its own, down to the entries that fail alone: one bad entry rejects
 * only its own caller, never the others of its batch (it costs about 2·log2(n) runs more).
 */
export function createBatcher<T, R>(run: (items: T[]) => Promise<R[]>, keyOf: (item: T) => string, maxBatch: number, options: BatcherOptions = {}): Batcher<T, R> {
  const concurrency = options.concurrency ?? 2;
  const split = options.split ?? (() => true);
  let waiting: Entry<T, R>[] = [];
  const running = new Set<Promise<void>>();
  const busyKeys = new Set<string>();
  let inBatches = 0;

  const nextBatch = (): Entry<T, R>[] => {
    const batch: Entry<T, R>[] = [];
    const keys = new Set<string>(busyKeys);
    const rest: Entry<T, R>[] = [];
    for (const entry of waiting) {
      const key = keyOf(entry.item);
      if (batch.length < maxBatch && !keys.has(key)) {
        batch.push(entry);
        keys.add(key);
      } else {
        rest.push(entry);
        // Later changes of a deferred employee must not overtake it.
        keys.add(key);
      }
    }
    waiting = rest;
    return batch;
  };

  const settle = async (entries: Entry<T, R>[]): Promise<void> => {
    try {
      const items = entries.map((e) => e.item);
      const span = options.span;
      const results = span === undefined ? await run(items) : await inBatchSpan(span.name, { ...span.attributes, [ATTR.batchSize]: items.length }, entries.map((e) => e.origin), () => run(items));
      entries.forEach((e, i) => e.resolve(results[i]!));
    } catch (error) {
      if (entries.length === 1 || !split(error)) {
        for (const e of entries) e.reject(error);
        return;
      }
      const half = Math.ceil(entries.length / 2);
      await settle(entries.slice(0, half));
      await settle(entries.slice(half));
    }
  };

  const runBatch = async (batch: Entry<T, R>[]): Promise<void> => {
    const keys = batch.map((e) => keyOf(e.item));
    for (const key of keys) busyKeys.add(key);
    inBatches += batch.length;
    try {
      await settle(batch);
    } finally {
      inBatches -= batch.length;
      for (const key of keys) busyKeys.delete(key);
    }
  };

  const start = (): void => {
    while (running.size < concurrency && waiting.length > 0) {
      const batch = nextBatch();
      // Everything waiting belongs to an employee already in a running batch.
      if (batch.length === 0) return;
      const done: Promise<void> = runBatch(batch).finally(() => {
        running.delete(done);
        start();
      });
      running.add(done);
    }
  };

  // Requests read in the same turn of the event loop (a burst) join one batch: starting at
  // the first would write it alone and make the rest wait for it.
  let startScheduled = false;
  const scheduleStart = (): void => {
    if (startScheduled) return;
    startScheduled = true;
    setImmediate(() => {
      startScheduled = false;
      start();
    });
  };

  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        waiting.push({ item, resolve, reject, origin: captureContext() });
        scheduleStart();
      });
    },
    backlog: () => waiting.length + inBatches,
    async idle() {
      // A start still scheduled (changes submitted this turn) counts as work to wait for.
      while (running.size > 0 || startScheduled) {
        if (running.size > 0) await Promise.all(running);
        else await new Promise((resolve) => setImmediate(resolve));
      }
    },
  };
}
