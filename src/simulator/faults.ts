import { z } from 'zod';

/** Misbehaviours the simulator can be told to show; all off by default. */
export interface SimulatorFaults {
  /** Added to every response. */
  latencyMs: number;
  /** Every Nth API request answers 429 with Retry-After (0 = off). */
  rateLimitEvery: number;
  /** Retry-After value on those 429s: seconds, or an HTTP date. Default '1'. */
  retryAfter: string;
  /** Every Nth API request answers 500/502/503 with a body that is not the error shape (0 = off). */
  serverErrorEvery: number;
  /** Every Nth result (by creation order, so always the same records) is served malformed, in list pages and by id (0 = off). */
  malformedResultEvery: number;
  /** After every Nth results page served, a new result dated inside that query's range appears (0 = off). */
  driftEvery: number;
  /** "Next Page" hrefs name http://evil.invalid:<port> instead of this host. */
  foreignNextLink: boolean;
  /** "Next Page" hrefs keep only ?page=N. */
  dropFiltersInNextLink: boolean;
}

export const NO_FAULTS: Readonly<SimulatorFaults> = Object.freeze({
  latencyMs: 0,
  rateLimitEvery: 0,
  retryAfter: '1',
  serverErrorEvery: 0,
  malformedResultEvery: 0,
  driftEvery: 0,
  foreignNextLink: false,
  dropFiltersInNextLink: false,
});

const count = z.number().int().min(0);

/** The admin endpoint's body: any subset of the faults. */
export const faultsPatchSchema = z
  .object({
    latencyMs: count.max(60_000),
    rateLimitEvery: count,
    retryAfter: z.string().min(1),
    serverErrorEvery: count,
    malformedResultEvery: count,
    driftEvery: count,
    foreignNextLink: z.boolean(),
    dropFiltersInNextLink: z.boolean(),
  })
  .partial()
  .strict();
