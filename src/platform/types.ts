import type { z } from 'zod';
import type { FastCheck } from './fast-checks.ts';
import type { Course, CreateUserInput, PlatformUser, ReportingFilter, Result, Seats } from './schemas.ts';
import type { RequestTally } from './request-tally.ts';

/** A record of a list page that failed validation: kept raw so the caller can quarantine it. */
export interface RecordProblem {
  /** `courses`, `results`, `filters`, `groups` or `users`. */
  resource: string;
  /** The record's position on its page (0-based). */
  index: number;
  page: number;
  /** The record exactly as the platform sent it. */
  raw: unknown;
  /** The validation message, naming the field. */
  message: string;
}

/** One page of a list, already validated record by record. */
export interface Page<T> {
  page: number;
  /** What the platform says the whole query holds; undefined when it does not say. */
  totalEntities: number | undefined;
  /**
   * When, on one clock per walk that ticks at every request and every response, this
   * page was asked for and its response arrived. A page asked for after another's
   * response arrived was served after it; pages read ahead are in flight together and
   * may be served in any order.
   */
  timing?: { sent: number; received: number };
  records: T[];
  problems: RecordProblem[];
}

export interface CourseQuery {
  categoryType?: string;
  name?: string;
}

export interface ResultsQuery {
  /** Sent as given: `YYYY-MM-DD` or an ISO-8601 instant. */
  startDate?: string;
  endDate?: string;
  /** Filter-answer or group GUIDs, sent as repeated `reportingFilters[]`. */
  reportingFilters?: string[];
}

export interface UserQuery {
  email?: string;
  orgId?: string;
  userId?: string;
}

/**
 * A paged list endpoint as a caller describes it (a resource declaration in
 * src/sync/resources/ passes its own): the client needs no call of its own per list.
 */
export interface Listing<T> {
  /** Names problems, quarantined records and log lines, e.g. `courses`. */
  resource: string;
  /** Under `/api/v2/`, e.g. `courses` or `results/group/{groupId}`: each `{name}` is filled from the request's `path`. */
  path: string;
  /**
   * `links`: the end is the absence of a "Next Page" link (results). `count`: by number
   * until a short or empty page or `totalEntities` (see paginate.ts).
   */
  paging: 'links' | 'count';
  /** Validates one entity; a failure sets the record aside (RecordProblem), never the page. */
  schema: z.ZodType<T>;
  /** A check in front of `schema` that gives zod's answers without zod (fast-checks.ts); default: the one registered for `schema`, if any. */
  fastCheck?: FastCheck<T> | undefined;
}

/** One JSON body read with GET (not a list), e.g. `users/seats`. */
export interface Endpoint<T> {
  /** Names log lines, e.g. `seats`. */
  resource: string;
  /** Under `/api/v2/`. */
  path: string;
  /** The body; a mismatch is a retryable MALFORMED_RESPONSE. */
  schema: z.ZodType<T>;
}

/** What one request of a listing asks: its query parameters (an array repeats the name) and the values of its path's `{name}`s. */
export interface ListRequest {
  query?: Readonly<Record<string, string | readonly string[] | undefined>>;
  path?: Readonly<Record<string, string>>;
}

export interface ListOptions {
  signal?: AbortSignal | undefined;
  startPage?: number | undefined;
  /** The last page to read (a re-read of a page range); default: to the end of the list. */
  endPage?: number | undefined;
  /** Following pages requested ahead while one is used (see paginate.ts). */
  prefetch?: number | undefined;
}

/** Every endpoint trainsync uses. Lists are async iterators of validated pages. */
export interface PlatformClient {
  /** Any paged list, validated record by record. */
  list<T>(listing: Listing<T>, request?: ListRequest, options?: ListOptions): AsyncIterable<Page<T>>;
  /**
   * One page of a listing by number, validated record by record (the results walk
   * chooses its own pages: see src/sync/results/completeness.ts). A "Next Page" link is
   * still checked (a foreign host is logged, a broken one refused).
   */
  /** One body read with GET; documented 400 codes throw PlatformError with their code. */
  read<T>(endpoint: Endpoint<T>, options?: { signal?: AbortSignal }): Promise<T>;
  listPage<T>(listing: Listing<T>, request: ListRequest, page: number, options?: { signal?: AbortSignal }): Promise<Page<T>>;
  listCourses(query?: CourseQuery, options?: { signal?: AbortSignal }): AsyncIterable<Page<Course>>;
  /** `prefetch`: following pages requested ahead while one is used; `endPage`: the last page to read (see paginate.ts). */
  listResults(query?: ResultsQuery, options?: { signal?: AbortSignal; startPage?: number; endPage?: number; prefetch?: number }): AsyncIterable<Page<Result>>;
  /** A record that fails validation throws InvalidRecordError (code INVALID_RECORD, not retried): quarantine it. */
  getResult(resultId: string): Promise<Result>;
  listFilters(options?: { signal?: AbortSignal }): AsyncIterable<Page<ReportingFilter>>;
  listUsers(query?: UserQuery, options?: { signal?: AbortSignal }): AsyncIterable<Page<PlatformUser>>;
  /** The first user whose e-mail matches exactly (case-insensitive); the platform's filter is partial. */
  findUserByEmail(email: string): Promise<PlatformUser | undefined>;
  getSeats(): Promise<Seats>;
  createUser(input: CreateUserInput): Promise<void>;
  /** The password travels only in the request body and is never logged. */
  setPassword(userIdentifier: string, password: string): Promise<void>;
  getAutostartLoginUrl(userIdentifier: string, courseId: string): Promise<URL>;
  disableUser(userId: string): Promise<void>;
  enableUser(userId: string): Promise<void>;
  addToGroup(groupId: string, userId: string): Promise<void>;
  removeFromGroup(groupId: string, userId: string): Promise<void>;
  /**
   * This client, with each HTTP attempt of every request sent through the view returned
   * also added to `tally` (a run's requests: src/sync/run.ts). Same transport, budget and
   * connections; `close` of either closes both.
   */
  counting(tally: RequestTally): PlatformClient;
  /** Releases the limiter's Redis connections. */
  close(): Promise<void>;
}

/** What the client reports about each HTTP exchange (for metrics). */
export interface RequestEvent {
  method: string;
  path: string;
  status: number | undefined;
  ms: number;
  attempt: number;
  code?: string;
}
