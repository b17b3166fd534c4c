/**
 * Group commit for SCIM changes: requests that arrive while a batch is being written
 * wait for the next one, so a burst of 1,000 creates costs a handful of snapshots and
 * enqueues rather than 1,000 serialised ones. Each caller's promise settles when its
 * own batch is durable. One change per key (employee) per batch: a second change of the
 * same employee goes in the next batch, in arrival order.
 */
export interface Batcher<T> {
  submit(item: T): Promise<void>;
  /** Resolves once nothing is queued or running. */
  idle(): Promise<void>;
}

interface Entry<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function createBatcher<T>(run: (items: T[]) => Promise<void>, keyOf: (item: T) => string, maxBatch: number): Batcher<T> {
  let waiting: Entry<T>[] = [];
  let running: Promise<void> | undefined;

  const nextBatch = (): Entry<T>[] => {
    const batch: Entry<T>[] = [];
    const keys = new Set<string>();
    const rest: Entry<T>[] = [];
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

  const drain = async (): Promise<void> => {
    while (waiting.length > 0) {
      const batch = nextBatch();
      try {
        await run(batch.map((e) => e.item));
        for (const e of batch) e.resolve();
      } catch (error) {
        for (const e of batch) e.reject(error);
      }
    }
  };

  const start = (): void => {
    if (running) return;
    running = drain().finally(() => {
      running = undefined;
      // Items submitted in the instant between the last check and now.
      if (waiting.length > 0) start();
    });
  };

  return {
    submit(item) {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        start();
      });
    },
    async idle() {
      while (running) await running;
    },
  };
}
