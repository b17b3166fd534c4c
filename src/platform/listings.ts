import { checkResult } from './fast-checks.ts';
import { courseSchema, filterSchema, resultSchema, seatsSchema, userSchema, type Course, type PlatformUser, type ReportingFilter, type Result, type Seats } from './schemas.ts';
import type { Endpoint, ListRequest, Listing, ResultsQuery } from './types.ts';

/**
 * The lists (and the one read) the client also offers by name (listCourses, listResults,
 * listFilters, listUsers, getSeats) for callers beyond the sync: provisioning reads users, doctor courses, the
 * webhooks' loader results. A resource declaration (src/sync/resources/) names one of
 * these as its endpoint; a list only a declaration reads is described in the declaration.
 */

export const COURSES: Listing<Course> = { resource: 'courses', path: 'courses', paging: 'count', schema: courseSchema };

export const FILTERS: Listing<ReportingFilter> = { resource: 'filters', path: 'filters', paging: 'count', schema: filterSchema };

/** 50 a page, numbered, with "Next Page" links; the walk chooses its pages by number. */
export const RESULTS: Listing<Result> = { resource: 'results', path: 'results', paging: 'links', schema: resultSchema, fastCheck: checkResult };

/** Paged by number (the vendor says users pages carry no links at present). */
export const USERS: Listing<PlatformUser> = { resource: 'users', path: 'users', paging: 'count', schema: userSchema };

/** Seats in use and in total; 400 NO_UNLIMITED_PLAN without an unlimited plan. */
export const SEATS: Endpoint<Seats> = { resource: 'seats', path: 'users/seats', schema: seatsSchema };

/** GET results' query: dates as given, each reporting filter as a repeated `reportingFilters[]`. */
export function resultsQuery(query: ResultsQuery): NonNullable<ListRequest['query']> {
  return { startDate: query.startDate, endDate: query.endDate, 'reportingFilters[]': query.reportingFilters };
}
