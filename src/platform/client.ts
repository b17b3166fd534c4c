import type { z } from 'zod';
import { createHash } from 'node:crypto';
import { requireOrgPlatform, type Config } from '../config.ts';
import type { OrgSettings } from '../settings/orgs-file.ts';
import type { Logger } from 'pino';
import { InvalidRecordError, malformed, PlatformError } from './errors.ts';
import { checkOrParse, fastCheckFor } from './fast-checks.ts';
import { apiBase, createTransport, socketsPerOrigin, type ApiRequest } from './http.ts';
import { parseLoginUrl } from './login-url.ts';
import { describeIssues, nextPageFromLinks, paginate, validateEntities } from './paginate.ts';
import { createRequestBudget } from './request-budget.ts';
import { DEFAULT_RETRY_POLICY } from './retry.ts';
import { COURSES, FILTERS, RESULTS, resultsQuery, SEATS, USERS } from './listings.ts';
import { createUserSchema, envelopeSchema, resultSchema, type Envelope, type PlatformUser } from './schemas.ts';
import type { RequestTally } from './request-tally.ts';
import type { ListOptions, ListRequest, Listing, Page, PlatformClient, RequestEvent } from './types.ts';

export interface PlatformClientOptions {
  /** The configured origin, e.g. `http://127.0.0.1:4000`; `/api/v2/...` is appended. */
  apiUrl: string;
  apiKey: string;
  log: Logger;
  /** Redis holding the shared request budget. */
  redisUrl: string;
  /** Redis key prefix (TRAINSYNC_QUEUE_PREFIX; tests pass their own). */
  keyPrefix: string;
  /** Shared by every process using the same Redis, prefix and origin. */
  requestsPerSecond: number;
  /** Whole request, default 30 s. */
  timeoutMs?: number;
  /** TCP/TLS connect, default 5 s. */
  connectTimeoutMs?: number;
  /** The socket cap of the process' one pool for this origin (http.ts, socketsPerOrigin). */
  maxSockets?: number;
  /** Attempts after the first, default 6. */
  retries?: number;
  /** Cap of any one backoff or Retry-After wait, default 60 s. */
  retryMaxDelayMs?: number;
  /** First backoff ceiling (doubles per retry), default 500 ms. */
  retryBaseDelayMs?: number;
  /** Extra spacing over 1000/rps, default 0.05. */
  budgetSafetyMargin?: number;
  /** Called after every HTTP attempt (metrics). */
  onRequest?: (event: RequestEvent) => void;
  /** The setting that holds apiUrl, named when nothing answers there; default TRAINSYNC_API_URL. */
  urlSetting?: string;
}

/** The client options from the validated config; `extra` overrides (tests, the CLI). */
export function platformClientOptionsFromConfig(config: Config, org: OrgSettings, log: Logger, extra: Partial<PlatformClientOptions> = {}): PlatformClientOptions {
  const { apiUrl, apiKey } = requireOrgPlatform(org);
  return {
    apiUrl,
    apiKey,
    log,
    redisUrl: config.REDIS_URL,
    keyPrefix: config.TRAINSYNC_QUEUE_PREFIX,
    requestsPerSecond: org.requestsPerSecond,
    timeoutMs: config.TRAINSYNC_HTTP_TIMEOUT_MS,
    connectTimeoutMs: config.TRAINSYNC_CONNECT_TIMEOUT_MS,
    maxSockets: socketsPerOrigin(config.TRAINSYNC_WORKER_CONCURRENCY, config.TRAINSYNC_PROVISION_CONCURRENCY),
    retries: config.TRAINSYNC_HTTP_RETRIES,
    retryMaxDelayMs: config.TRAINSYNC_RETRY_MAX_DELAY_MS,
    urlSetting: apiUrlSetting(config, org),
    ...extra,
  };
}

/** Where a person fixes an organisation's apiUrl: TRAINSYNC_API_URL, or its entry in the orgs file. */
export function apiUrlSetting(config: Pick<Config, 'TRAINSYNC_ORGS_FILE'>, org: Pick<OrgSettings, 'slug'>): string {
  return config.TRAINSYNC_ORGS_FILE ? `the apiUrl of organisation ${org.slug} in ${config.TRAINSYNC_ORGS_FILE}` : 'TRAINSYNC_API_URL';
}

/**
 * The budget's name: one per API key (the platform's limit is the key's), shared by
 * every process and every organisation entry using that key; a digest, never the key.
 */
export function budgetIdentity(origin: string, apiKey: string): string {
  return `${origin}#${createHash('sha256').update(apiKey).digest('hex').slice(0, 16)}`;
}

function parseJsonBody(body: string, method: string, path: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw malformed(method, path, `the body is not JSON (${body.length} bytes)`);
  }
}

/**
 * A 2xx JSON body checked against `schema`; a mismatch is a retryable MALFORMED_RESPONSE.
 * The body is parsed once, and checked in place where a fast check exists (fast-checks.ts).
 */
function jsonOf<T>(schema: z.ZodType<T>, method: string, path: string): (body: string, status: number) => T {
  const check = fastCheckFor(schema);
  return (body, status) => {
    const parsed = checkOrParse(schema, check, parseJsonBody(body, method, path));
    if (!parsed.success) throw malformed(method, path, describeIssues(parsed.error), status);
    return parsed.data;
  };
}

/**
 * One record read by id: a body that is not JSON is a retryable MALFORMED_RESPONSE, but
 * JSON that fails `schema` is the record itself being invalid: an InvalidRecordError
 * (permanent, quarantined by the caller), since reading it again returns the same record.
 */
function recordOf<T>(schema: z.ZodType<T>, method: string, path: string): (body: string, status: number) => T {
  const check = fastCheckFor(schema);
  return (body, status) => {
    const raw = parseJsonBody(body, method, path);
    const parsed = checkOrParse(schema, check, raw);
    if (!parsed.success) {
      const problem = describeIssues(parsed.error);
      throw new InvalidRecordError(`${method} ${path} returned a record that fails validation: ${problem}`, raw, problem, status);
    }
    return parsed.data;
  };
}

/** Writes answer 204 with no body; anything they do send is ignored. */
const ignoreBody = (): void => undefined;

const seg = (value: string): string => encodeURIComponent(value.trim());

/**
 * The platform API client. Every call goes through one transport (shared request
 * budget, retries, logging) and every body through zod.
 *
 * Writes are retried like reads: the vendor documents every write as idempotent (204
 * even when nothing changes) except POST users, whose retry after a lost response
 * answers EMAIL_IN_USE_ORG_CONNECTED; the provisioning layer treats that as "created"
 * and adopts the account, so retrying it is safe too.
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const { log } = options;
  const { origin } = apiBase(options.apiUrl);
  const budget = createRequestBudget({
    redisUrl: options.redisUrl,
    keyPrefix: options.keyPrefix,
    origin: budgetIdentity(origin, options.apiKey),
    requestsPerSecond: options.requestsPerSecond,
    log,
    ...(options.budgetSafetyMargin === undefined ? {} : { safetyMargin: options.budgetSafetyMargin }),
  });
  const transport = createTransport({
    apiUrl: options.apiUrl,
    apiKey: options.apiKey,
    log,
    budget,
    retry: {
      retries: options.retries ?? DEFAULT_RETRY_POLICY.retries,
      baseDelayMs: options.retryBaseDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs,
      maxDelayMs: options.retryMaxDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
    },
    timeoutMs: options.timeoutMs ?? 30_000,
    connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
    maxSockets: options.maxSockets,
    onRequest: options.onRequest,
    urlSetting: options.urlSetting,
  });

  /** The request's query: `undefined` and empty values left out, an array's values repeated under one name. */
  function queryOf(request: ListRequest): URLSearchParams {
    const q = new URLSearchParams();
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (typeof value === 'string') {
        if (value !== '') q.set(key, value);
      } else if (value !== undefined) {
        for (const item of value) q.append(key, item);
      }
    }
    return q;
  }

  /** The listing's path with each `{name}` filled (encoded) from the request; a name without a value is a programming error. */
  function pathOf(listing: Listing<unknown>, request: ListRequest): string {
    return listing.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
      const value = request.path?.[name];
      if (value === undefined) throw new Error(`${listing.resource}: no value for {${name}} of ${listing.path}`);
      return seg(value);
    });
  }

  function params(entries: Record<string, string | undefined>): URLSearchParams {
    const q = new URLSearchParams();
    for (const [key, value] of Object.entries(entries)) if (value !== undefined && value !== '') q.set(key, value);
    return q;
  }

  /**
   * The client's methods over one way of sending: every request as it is (the client), or
   * each one carrying a run's tally (`counting`).
   */
  function clientFor(tally: RequestTally | undefined): PlatformClient {
    const send = tally === undefined ? <T>(request: ApiRequest<T>): Promise<T> => transport.send(request) : <T>(request: ApiRequest<T>): Promise<T> => transport.send({ ...request, tally });

    function list<T>(listing: Listing<T>, request: ListRequest = {}, listOptions: ListOptions = {}): AsyncIterable<Page<T>> {
      const path = pathOf(listing as Listing<unknown>, request);
      const query = queryOf(request);
      const parseEnvelope = jsonOf<Envelope>(envelopeSchema, 'GET', `/api/v2/${path}`);
      return paginate({
        resource: listing.resource,
        schema: listing.schema,
        check: listing.fastCheck ?? fastCheckFor(listing.schema),
        mode: listing.paging,
        origin,
        log,
        startPage: listOptions.startPage,
        endPage: listOptions.endPage,
        signal: listOptions.signal,
        prefetch: listOptions.prefetch,
        fetchPage: (page) => {
          // The caller's own query plus the page number: never a link's query.
          const q = new URLSearchParams(query);
          q.set('page', String(page));
          return send({ method: 'GET', path, query: q, parse: parseEnvelope, signal: listOptions.signal });
        },
      });
    }

    async function listPage<T>(listing: Listing<T>, request: ListRequest, page: number, pageOptions: { signal?: AbortSignal } = {}): Promise<Page<T>> {
      const path = pathOf(listing as Listing<unknown>, request);
      const q = queryOf(request);
      q.set('page', String(page));
      const envelope = await send({ method: 'GET', path, query: q, parse: jsonOf<Envelope>(envelopeSchema, 'GET', `/api/v2/${path}`), signal: pageOptions.signal });
      if (envelope.page !== undefined && envelope.page !== page) {
        throw new PlatformError(`paging through ${listing.resource} stopped: asked for page ${page}, the platform answered page ${envelope.page}`, { code: 'PAGINATION_LOOP', retryable: false });
      }
      // The walk pages by number and total; a link is still checked (a foreign host is logged, a broken one refused).
      nextPageFromLinks(envelope.links, { origin, resource: listing.resource, log });
      const { records, problems } = validateEntities(listing.resource, page, envelope.entities, listing.schema, listing.fastCheck ?? fastCheckFor(listing.schema));
      if (problems.length > 0) log.warn({ resource: listing.resource, page, problems: problems.length }, 'records failed validation and were set aside');
      return { page, totalEntities: envelope.totalEntities, records, problems };
    }

    const client: PlatformClient = {
      list,
      listPage,

      read(endpoint, readOptions = {}) {
        return send({ method: 'GET', path: endpoint.path, parse: jsonOf(endpoint.schema, 'GET', `/api/v2/${endpoint.path}`), signal: readOptions.signal });
      },

      listCourses(query = {}, listOptions = {}) {
        return list(COURSES, { query: { categoryType: query.categoryType, name: query.name } }, listOptions);
      },

      listResults(query = {}, listOptions = {}) {
        return list(RESULTS, { query: resultsQuery(query) }, listOptions);
      },

      getResult(resultId) {
        const path = `results/${seg(resultId)}`;
        return send({ method: 'GET', path, parse: recordOf(resultSchema, 'GET', `/api/v2/${path}`) });
      },

      listFilters(listOptions = {}) {
        return list(FILTERS, {}, listOptions);
      },

      listUsers(query = {}, listOptions = {}) {
        return list(USERS, { query: { email: query.email, orgId: query.orgId, userId: query.userId } }, listOptions);
      },

      async findUserByEmail(email) {
        const wanted = email.trim().toLowerCase();
        if (wanted === '') return undefined;
        // The platform's filter is a partial match on username and e-mail: check exactly here.
        for await (const page of client.listUsers({ email: wanted })) {
          const match = page.records.find((u: PlatformUser) => u.email.trim().toLowerCase() === wanted);
          if (match !== undefined) return match;
        }
        return undefined;
      },

      getSeats() {
        return client.read(SEATS);
      },

      async createUser(input) {
        const body = createUserSchema.safeParse(input);
        if (!body.success) {
          throw new PlatformError(`POST /api/v2/users not sent: ${describeIssues(body.error)}`, {
            code: 'INVALID_MODEL',
            details: body.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message })),
            retryable: false,
          });
        }
        await send({ method: 'POST', path: 'users', json: body.data, parse: ignoreBody });
      },

      async setPassword(userIdentifier, password) {
        await send({
          method: 'POST',
          path: 'users/password',
          query: params({ userIdentifier }),
          json: { password },
          parse: ignoreBody,
        });
      },

      getAutostartLoginUrl(userIdentifier, courseId) {
        return send({
          method: 'POST',
          path: 'login/autostart',
          query: params({ userIdentifier, courseId }),
          parse: (body) => parseLoginUrl(body),
        });
      },

      async disableUser(userId) {
        await send({ method: 'PATCH', path: `users/${seg(userId)}/disable`, parse: ignoreBody });
      },

      async enableUser(userId) {
        await send({ method: 'PATCH', path: `users/${seg(userId)}/enable`, parse: ignoreBody });
      },

      async addToGroup(groupId, userId) {
        await send({ method: 'POST', path: `groups/${seg(groupId)}/users`, json: { userId }, parse: ignoreBody });
      },

      async removeFromGroup(groupId, userId) {
        await send({ method: 'DELETE', path: `groups/${seg(groupId)}/users/${seg(userId)}`, parse: ignoreBody });
      },

      counting(runTally) {
        return clientFor(runTally);
      },

      close() {
        transport.close();
        return budget.close();
      },
    };
    return client;
  }

  return clientFor(undefined);
}
