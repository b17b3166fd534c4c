import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Counts the platform requests made on behalf of one piece of work (a sync run),
 * though one client serves every job of the process: each HTTP attempt adds to the
 * tally of the async context it was started from.
 */
export interface RequestTally {
  requests: number;
}

const current = new AsyncLocalStorage<RequestTally>();

/** Runs `work` with every platform request it starts (directly or not) added to `tally`. */
export function countRequests<T>(tally: RequestTally, work: () => Promise<T>): Promise<T> {
  return current.run(tally, work);
}

/** Called by the transport for every HTTP attempt it sends. */
export function tallyRequest(): void {
  const tally = current.getStore();
  if (tally) tally.requests += 1;
}
