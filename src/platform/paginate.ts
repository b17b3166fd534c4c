import type { z } from 'zod';
import type { Logger } from 'pino';
import { malformed, PlatformError } from './errors.ts';
import { fastCheckFor, type FastCheck } from './fast-checks.ts';
import type { Envelope } from './schemas.ts';
import type { Page, RecordProblem } from './types.ts';

/**
 * Walks a paged list as an async iterator of validated pages.
 *
 * It never assumes a page size and never trusts a "Next Page" href beyond its page
 * number: each request is the caller's own query plus `page`, sent to the configured
 * origin (a link may drop filters, or name another host). It refuses loops: a page
 * number seen twice, a page the reported total cannot reach, or a server that answers
 * a different page than the one asked for.
 */

export interface PaginateOptions<T> {
  /** `courses`, `results`, `filters`, `users`, `groups`: names problems and log lines. */
  resource: string;
  /** Validates one entity; a failure becomes a RecordProblem, not an error. */
  schema: z.ZodType<T>;
  /** The fast path in front of `schema`; default: the one registered for it (fast-checks.ts). */
  check?: FastCheck<T> | undefined;
  /** Fetches page `n` with the caller's query (retries and envelope checks included). */
  fetchPage: (page: number) => Promise<Envelope>;
  /**
   * `links`: the end is the absence of a "Next Page" link (results).
   * `count`: follow a link if there is one, else page by number until a short or empty
   * page or the reported total is reached (users and groups send `links: []`; so do
   * courses and filters, which may or may not page at all).
   */
  mode: 'links' | 'count';
  /** The configured origin; a link naming another host is logged. */
  origin: string;
  log: Logger;
  startPage?: number | undefined;
  /** The last page to read (a re-read of a page range); default: to the end of the list. */
  endPage?: number | undefined;
  signal?: AbortSignal | undefined;
  /**
   * How many following pages to request while the current one is validated and used,
   * by number (default 0). Only while every link so far pointed at the next number and
   * only for pages the reported total can hold; a page fetched ahead counts only if a
   * link then leads to it, else it is dropped. Costs at most this many spare requests
   * at the end of a walk.
   */
  prefetch?: number | undefined;
}

/** `field.path: message; …` from a zod error, so a quarantined record says what is wrong. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(record)'}: ${issue.message}`).join('; ');
}

/** Validates each entity on its own: one bad record never sinks its page. */
export function validateEntities<T>(
  resource: string,
  page: number,
  entities: readonly unknown[],
  schema: z.ZodType<T>,
  check: FastCheck<T> | undefined = fastCheckFor(schema),
): { records: T[]; problems: RecordProblem[] } {
  const records: T[] = [];
  const problems: RecordProblem[] = [];
  // A record that passes is zod's output built in place, not a copy (fast-checks.ts).
  for (let index = 0; index < entities.length; index++) {
    const raw = entities[index];
    // checkOrParse without its answer object per record: the check alone, zod when it cannot say.
    const fast = check?.(raw);
    if (fast !== undefined) {
      records.push(fast);
      continue;
    }
    const parsed = schema.safeParse(raw);
    if (parsed.success) records.push(parsed.data);
    else problems.push({ resource, page, index, raw, message: describeIssues(parsed.error) });
  }
  return { records, problems };
}

/**
 * The page number a "Next Page" link points at, or undefined when there is no such
 * link. Only the number is used; a foreign host is logged and otherwise ignored.
 */
export function nextPageFromLinks(
  links: Envelope['links'],
  context: { origin: string; resource: string; log: Logger },
): number | undefined {
  const link = links.find((l) => /^next(\s*page)?$/i.test(l.type.trim()));
  if (link === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(link.href, `${context.origin}/`);
  } catch {
    throw malformed('GET', context.resource, `the "Next Page" link is not a URL: ${JSON.stringify(link.href.slice(0, 200))}`);
  }
  if (url.origin !== context.origin) {
    context.log.warn(
      { resource: context.resource, foreignHost: url.host, configuredOrigin: context.origin },
      'a "Next Page" link names another host: only its page number is used, the request stays on the configured origin',
    );
  }
  const raw = pageParam(url);
  if (raw === null || !/^\d+$/.test(raw) || Number(raw) < 1) {
    throw malformed('GET', context.resource, `the "Next Page" link has no usable page number (page=${JSON.stringify(raw)})`);
  }
  return Number(raw);
}

/**
 * `url.searchParams.get('page')`, read off the query's text when it holds nothing to
 * decode (no `%`, no `+`: the platform's own links), without a URLSearchParams per page;
 * anything else through URLSearchParams. The same answer either way: pairs split on `&`,
 * a name ends at the first `=`, the first `page` wins.
 */
function pageParam(url: URL): string | null {
  const search = url.search;
  if (search.includes('%') || search.includes('+')) return url.searchParams.get('page');
  let from = 1;
  while (from < search.length) {
    let end = search.indexOf('&', from);
    if (end < 0) end = search.length;
    const eq = search.indexOf('=', from);
    const nameEnd = eq < 0 || eq > end ? end : eq;
    if (nameEnd - from === 4 && search.startsWith('page', from)) return nameEnd === end ? '' : search.slice(nameEnd + 1, end);
    from = end + 1;
  }
  return null;
}

function loop(resource: string, message: string): PlatformError {
  return new PlatformError(`paging through ${resource} stopped: ${message}`, { code: 'PAGINATION_LOOP', retryable: false });
}

export async function* paginate<T>(options: PaginateOptions<T>): AsyncGenerator<Page<T>, void, undefined> {
  const { resource, log } = options;
  const seen = new Set<number>();
  let largestPageSize = 0;
  let firstPageSize: number | undefined;
  let largestTotal: number | undefined;
  let pageNo: number | undefined = options.startPage ?? 1;
  if (!Number.isInteger(pageNo) || pageNo < 1) throw new RangeError(`startPage must be a whole number of at least 1, got ${pageNo}`);

  const prefetch = Math.max(0, Math.floor(options.prefetch ?? 0));
  let linksAreSequential = true;
  const inFlight = new Map<number, Promise<Envelope>>();
  const timings = new Map<number, { sent: number; received: number }>();
  let clock = 0;
  const request = (n: number): Promise<Envelope> => {
    let pending = inFlight.get(n);
    if (pending === undefined) {
      const sent = ++clock;
      pending = options.fetchPage(n).then((envelope) => {
        timings.set(n, { sent, received: ++clock });
        return envelope;
      });
      // A page fetched ahead may never be used; its failure must not go unhandled.
      pending.catch(() => undefined);
      inFlight.set(n, pending);
    }
    return pending;
  };
  const canExist = (n: number): boolean =>
    largestTotal !== undefined && largestPageSize > 0 && (n - 1) * largestPageSize < largestTotal && (options.endPage === undefined || n <= options.endPage);

  while (pageNo !== undefined) {
    if (options.signal?.aborted) throw new PlatformError(`paging through ${resource} was aborted`, { code: 'ABORTED', retryable: true, cause: options.signal.reason });
    if (seen.has(pageNo)) throw loop(resource, `page ${pageNo} was already read (a "Next Page" link points back)`);
    if (largestTotal !== undefined && largestPageSize > 0 && (pageNo - 1) * largestPageSize >= largestTotal) {
      throw loop(resource, `page ${pageNo} cannot exist: ${largestTotal} entities fit in ${Math.ceil(largestTotal / largestPageSize)} pages of up to ${largestPageSize}`);
    }
    seen.add(pageNo);

    const envelope = await request(pageNo);
    inFlight.delete(pageNo);
    if (envelope.page !== undefined && envelope.page !== pageNo) {
      throw loop(resource, `asked for page ${pageNo}, the platform answered page ${envelope.page}`);
    }
    const count = envelope.entities.length;
    largestPageSize = Math.max(largestPageSize, count);
    firstPageSize ??= count;
    if (envelope.totalEntities !== undefined) largestTotal = Math.max(largestTotal ?? 0, envelope.totalEntities);

    if (prefetch > 0 && linksAreSequential) {
      for (let n = pageNo + 1; n <= pageNo + prefetch; n += 1) if (!seen.has(n) && canExist(n)) void request(n);
    }

    const { records, problems } = validateEntities(resource, pageNo, envelope.entities, options.schema, options.check ?? fastCheckFor(options.schema));
    if (problems.length > 0) log.warn({ resource, page: pageNo, problems: problems.length }, 'records failed validation and were set aside');
    const timing = timings.get(pageNo);
    timings.delete(pageNo);
    yield { page: pageNo, totalEntities: envelope.totalEntities, ...(timing === undefined ? {} : { timing }), records, problems };

    const linked = nextPageFromLinks(envelope.links, { origin: options.origin, resource, log });
    if (options.endPage !== undefined && pageNo >= options.endPage) {
      pageNo = undefined;
    } else if (linked !== undefined) {
      // An empty page that still links onwards is treated as the end, not trusted.
      if (count === 0) {
        log.warn({ resource, page: pageNo, next: linked }, 'an empty page links to another page; stopping');
        pageNo = undefined;
      } else {
        if (linked !== pageNo + 1) linksAreSequential = false;
        pageNo = linked;
      }
    } else if (options.mode === 'links') {
      pageNo = undefined;
    } else if (count === 0 || count < firstPageSize || (envelope.totalEntities !== undefined && pageNo * firstPageSize >= envelope.totalEntities)) {
      pageNo = undefined;
    } else {
      pageNo += 1;
    }
  }
}
