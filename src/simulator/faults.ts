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
  /**
   * Arrivals: before every Nth results page is served (pages past the end do not count),
   * `driftCount` new results appear at the newest end of the listing, where new
   * completions land on a list ordered oldest first: dated after every other result
   * (listed last by every dated query whose range reaches them), or, while an undated
   * query pages, as just-started results after the incomplete ones (0 = off).
   */
  driftEvery: number;
  /** New results per arrival (default 1). */
  driftCount: number;
  /**
   * Removal while paging: after every Nth results page served (as for arrivals), one result of that
   * query's listing on a page already served is deleted, so every later result shifts
   * back by one and the first result of the next page moves onto a page the client has
   * read (0 = off).
   */
  removeEvery: number;
  /** Removals in all before the removal fault stops (0 = no limit). */
  removeLimit: number;
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
  driftCount: 1,
  removeEvery: 0,
  removeLimit: 0,
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
    driftCount: count.min(1).max(1_000),
    removeEvery: count,
    removeLimit: count,
    foreignNextLink: z.boolean(),
    dropFiltersInNextLink: z.boolean(),
  })
  .partial()
  .strict();
