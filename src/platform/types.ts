import type { Course, CreateUserInput, Group, PlatformUser, ReportingFilter, Result, Seats } from './schemas.ts';

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

/** Every endpoint trainsync uses. Lists are async iterators of validated pages. */
export interface PlatformClient {
  listCourses(query?: CourseQuery, options?: { signal?: AbortSignal }): AsyncIterable<Page<Course>>;
  /** `prefetch`: following pages requested ahead while one is used; `endPage`: the last page to read (see paginate.ts). */
  listResults(query?: ResultsQuery, options?: { signal?: AbortSignal; startPage?: number; endPage?: number; prefetch?: number }): AsyncIterable<Page<Result>>;
  /**
   * One page of GET results by number, validated record by record (the results walk
   * chooses its own pages: see src/sync/results/completeness.ts).
   */
  getResultsPage(query: ResultsQuery, page: number, options?: { signal?: AbortSignal }): Promise<Page<Result>>;
  /** A record that fails validation throws InvalidRecordError (code INVALID_RECORD, not retried): quarantine it. */
  getResult(resultId: string): Promise<Result>;
  listFilters(options?: { signal?: AbortSignal }): AsyncIterable<Page<ReportingFilter>>;
  /** GET groups (vendor only) with the courses each assigns; a platform without it answers 404. */
  listGroups(options?: { signal?: AbortSignal }): AsyncIterable<Page<Group>>;
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
