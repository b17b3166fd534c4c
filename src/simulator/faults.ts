import { z } from 'zod';

export const ARRIVAL_PLACES = ['tail', 'head', 'middle', 'random'] as const;
export type ArrivalPlace = (typeof ARRIVAL_PLACES)[number];
export const REMOVAL_PLACES = ['served', 'anywhere'] as const;
export type RemovalPlace = (typeof REMOVAL_PLACES)[number];

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
   * `driftCount` new results appear in the listing of the query being paged, matching
   * its filters and date range, where `arrivalsAt` says (0 = off).
   */
  driftEvery: number;
  /** New results per arrival (default 1). */
  driftCount: number;
  /**
   * Where an arrival lands in the listing of the query being paged (dated results are
   * listed oldest first):
   * - `tail` (default): at its newest end, where new completions land: dated after the
   *   newest result it selects (after every other result when its range reaches that
   *   far), or, while an undated query pages, a just-started result after the
   *   incomplete ones;
   * - `head`: listed first: dated just before the earliest result it selects;
   * - `middle`: a completion recorded late: dated a few days before the newest result it
   *   selects (between its earliest and newest when its range is shorter);
   * - `random`: one of the three, drawn for each arrival.
   */
  arrivalsAt: ArrivalPlace;
  /**
   * Removal while paging: after every Nth results page served (as for arrivals), one
   * result of that query's listing is deleted, where `removeAt` says (0 = off).
   */
  removeEvery: number;
  /** Removals in all before the removal fault stops (0 = no limit). */
  removeLimit: number;
  /**
   * Which result a removal deletes:
   * - `served` (default): one on a page already served, so every later result shifts
   *   back by one and the first result of the next page moves onto a page the client
   *   has read;
   * - `anywhere`: any result of the listing, ahead of the reader or behind it.
   */
  removeAt: RemovalPlace;
  /**
   * A removal and an arrival in one interval: after every Nth results page served (as
   * for arrivals), one result on a page of that query already served is deleted and one
   * result is completed now (dated at the present instant, matching the query's filters)
   * before the next page is served (0 = off). In a list of oldest first the arrival lands
   * ahead of a reader that is still in the dated results, so the total does not move while
   * a result shifts back across the page the reader has read: the case the completeness
   * rule cannot see in one list. A query whose dates end before now does not list the
   * arrival (new completions land in the open window, not in closed ones).
   */
  pairEvery: number;
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
  arrivalsAt: 'tail',
  removeEvery: 0,
  removeLimit: 0,
  removeAt: 'served',
  pairEvery: 0,
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
    arrivalsAt: z.enum(ARRIVAL_PLACES),
    removeEvery: count,
    removeLimit: count,
    removeAt: z.enum(REMOVAL_PLACES),
    pairEvery: count,
    foreignNextLink: z.boolean(),
    dropFiltersInNextLink: z.boolean(),
  })
  .partial()
  .strict();
