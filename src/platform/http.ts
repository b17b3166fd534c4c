import { errorMessage } from '../lib/errors.ts';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { classifyResponse, classifyTransportError, PLATFORM_UNREACHABLE, PlatformError, platformUnreachable } from './errors.ts';
import type { RequestBudget } from './request-budget.ts';
import type { RequestTally } from './request-tally.ts';
import { leasePool, type PoolLease } from './shared-pools.ts';
import { parseRetryAfter, retryDelay, sleep, type RetryPolicy } from './retry.ts';
import type { RequestEvent } from './types.ts';
import { ATTR } from '../lib/tracing/attributes.ts';
import { annotate, inSpan, tracingOn } from '../lib/tracing/spans.ts';

/**
 * The one place HTTP happens. Every attempt takes a token from the shared budget, is
 * logged as `{method, path, status, ms, attempt}` (never the key, the query or a body),
 * and is classified; the retry loop is ours so each retry obeys the budget too.
 *
 * The transport is undici, not got (the stack's named client): a results walk sends
 * thousands of GETs a minute, and got's per-request objects plus node:http cost 2–2.5×
 * undici's CPU per page (`npm run bench -- http`); swapping this file alone took a sync's
 * CPU per result from ~24 to ~14 µs (docs/benchmarks.md). What got gave us is kept here, each explicitly:
 * - the key only to the configured origin: a Pool is bound to one origin and takes only
 *   a path, so no request of ours can go anywhere else, and it never follows a redirect
 *   (a 3xx is classified like any other status, not retried);
 * - a whole-request timeout (our own timer) besides the connect timeout;
 * - keep-alive sockets of our own, at most MAX_SOCKETS per origin, shared by the
 *   organisations' clients of one process (shared-pools.ts);
 * - transport errors classified by code (errors.ts), with bare causes (no headers).
 * The body is read as text once and parsed by the caller once.
 */

/**
 * Sockets per origin for four jobs: every window (TRAINSYNC_RESULTS_CONCURRENCY) of each
 * with its pages read ahead stays on an open connection.
 */
export const MAX_SOCKETS = 64;

/**
 * The cap of the one pool a process keeps per origin (shared-pools.ts): MAX_SOCKETS for
 * every four sync jobs it runs at once, and one for each provisioning job. Sockets open
 * only as requests need them and close after 5 s idle, so a high cap costs nothing idle;
 * what is in flight is bounded by the budgets long before it.
 */
export function socketsPerOrigin(workerConcurrency: number, provisionConcurrency: number): number {
  return MAX_SOCKETS * Math.ceil(workerConcurrency / 4) + provisionConcurrency;
}

export interface TransportOptions {
  /** The configured base, e.g. `http://127.0.0.1:4000`; `/api/v2/` is appended. */
  apiUrl: string;
  apiKey: string;
  log: Logger;
  budget: RequestBudget;
  retry: RetryPolicy;
  timeoutMs: number;
  connectTimeoutMs: number;
  /** The shared pool's socket cap (socketsPerOrigin); MAX_SOCKETS when unset. */
  maxSockets?: number | undefined;
  onRequest?: ((event: RequestEvent) => void) | undefined;
  /**
   * The setting a person fixes when nothing answers at apiUrl (`TRAINSYNC_API_URL`, or an
   * organisation's apiUrl in the orgs file). Unset: such a failure is retried like an outage
   * (the worker, which outlives a platform that is down when it starts).
   */
  urlSetting?: string | undefined;
}

/** What a caller asks for; `path` is relative to `/api/v2/` and already encoded. */
export interface ApiRequest<T> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: URLSearchParams | undefined;
  /** A JSON body; when absent on a write, `Content-Length: 0` is sent. */
  json?: unknown;
  /**
   * Reads a 2xx body; throws a PlatformError (MALFORMED_RESPONSE, retryable) when the
   * body is wrong, so a bad body is retried like a 5xx.
   */
  parse: (body: string, status: number) => T;
  signal?: AbortSignal | undefined;
  /** Each HTTP attempt of this request is added to it (a run's requests: request-tally.ts). */
  tally?: RequestTally | undefined;
}

export interface Transport {
  /** The configured origin (`scheme://host:port`): the only place the key is sent. */
  readonly origin: string;
  send<T>(request: ApiRequest<T>): Promise<T>;
  /** Closes the idle keep-alive sockets. */
  close(): void;
}

/** `http://h:1/base/` → base URL ending in `/api/v2/`; the origin is what the budget keys on. */
export function apiBase(apiUrl: string): { origin: string; prefixUrl: string } {
  const url = new URL(apiUrl);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`TRAINSYNC_API_URL must be http(s): ${url.protocol}`);
  const basePath = url.pathname.replace(/\/+$/, '');
  return { origin: url.origin, prefixUrl: `${url.origin}${basePath}/api/v2/` };
}

/**
 * A request's path as a span names it: `/api/v2/users/{id}/disable`. Only segments that are
 * plain lowercase words stay; any other (an id, a GUID, anything a person could be named
 * by) becomes `{id}`, and the query is never part of it.
 */
export function pathTemplate(path: string): string {
  return `/api/v2/${path
    .split('/')
    .map((segment) => (/^[a-z][a-z_-]*$/.test(segment) ? segment : '{id}'))
    .join('/')}`;
}

/** Keep-alive sockets of our own to the configured origin only. */
function openPool({ Pool }: typeof import('undici'), origin: string, options: TransportOptions): Dispatcher {
  const { timeoutMs } = options;
  // Node's global dispatcher would do keep-alive too, but is shared with every other
  // client in the process, has no socket limit of ours and goes to any origin.
  return new Pool(origin, {
    connections: options.maxSockets ?? MAX_SOCKETS,
    pipelining: 1,
    keepAliveTimeout: 5_000,
    connect: { timeout: options.connectTimeoutMs },
    // Each phase is bounded by the whole request's timeout; the timer below bounds the sum.
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}

interface Answer {
  status: number;
  body: string;
  retryAfter: string | string[] | undefined;
}

/**
 * One exchange as undici's own dispatch handler: the status, Retry-After and the body's
 * bytes, decoded once as UTF-8 at the end (a BOM skipped), as `request()` and
 * `body.text()` give them, without their per-request stream, abort signal and callback
 * layers (15–20 of its 80–90 µs of CPU a page of 50 results, measured beside `request()`).
 *
 * The budget's `sent` is the moment undici writes the request, not the call: on an idle
 * keep-alive socket undici writes one event-loop turn later (it first checks the socket),
 * 14 ms at the median and up to 140 ms later on a busy process (measured against packet
 * capture, docs/benchmarks.md), so two requests could reach the platform closer than the
 * budget spaces them. `onRequestStart` runs synchronously just before the headers are written.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** Why it was stopped (the deadline, the caller's signal), before or after it started. */
  private reason: Error | undefined;
  /** The answer's status once its headers came (0 before). */
  status = 0;
  private retryAfter: string | string[] | undefined;
  private readonly chunks: Buffer[] = [];
  private length = 0;

  constructor(
    private readonly sent: (() => void) | undefined,
    private readonly resolve: (answer: Answer) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  /** Stops the exchange: at once if it started, else as undici starts it (never written). */
  stop(reason: Error): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.sent?.();
    if (this.reason !== undefined) {
      controller.abort(this.reason);
      return;
    }
    this.controller = controller;
  }

  onRequestUpgrade(controller: Dispatcher.DispatchController): void {
    // Never asked for: no upgrade is sent, so one is a broken answer.
    controller.abort(new Error('the platform switched protocols'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // An informational answer (1xx) comes before the real one.
    if (statusCode < 200) return;
    this.status = statusCode;
    this.retryAfter = headers['retry-after'];
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  onResponseEnd(): void {
    this.resolve({ status: this.status, body: decodeBody(this.chunks, this.length), retryAfter: this.retryAfter });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.reject(error);
  }
}

/** The body's bytes as text: UTF-8 with a leading BOM skipped, as undici's `body.text()` reads it. */
export function decodeBody(chunks: readonly Buffer[], length: number): string {
  if (chunks.length === 0 || length === 0) return '';
  const buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  const start = buffer.length > 2 && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf ? 3 : 0;
  return buffer.toString('utf8', start);
}

let undiciLoading: Promise<typeof import('undici')> | undefined;

/**
 * Loads undici once per process. The first request loads it otherwise, after its grant:
 * 145 ms of CPU (0.5 s on a machine at load average 10) between the grant and the wire, on
 * the clock of a sync paced by the budget. The worker and `trainsync sync` start it as they
 * start, beside their connections to Postgres and Redis.
 */
export function loadHttpClient(): Promise<typeof import('undici')> {
  undiciLoading ??= import('undici');
  return undiciLoading;
}

export function createTransport(options: TransportOptions): Transport {
  const { origin, prefixUrl } = apiBase(options.apiUrl);
  const basePath = prefixUrl.slice(origin.length);
  const { log, budget, retry, timeoutMs } = options;
  // undici is loaded by the first request: a command that never calls the platform
  // (status, cancel, migrate…) does not pay its ~30 ms of loading at every start.
  // The pool is shared with every other client of the same origin in this process (shared-pools.ts).
  let lease: PoolLease | undefined;
  let ready: Dispatcher | undefined;
  const connect = async (): Promise<Dispatcher> => {
    lease ??= leasePool(`${origin} ${timeoutMs} ${options.connectTimeoutMs} ${options.maxSockets ?? MAX_SOCKETS}`, () => loadHttpClient().then((undici) => openPool(undici, origin, options)));
    ready = await lease.pool;
    return ready;
  };
  const sent = (): void => budget.sent?.();
  const readHeaders: Record<string, string> = {
    authorization: `Bearer ${options.apiKey}`,
    accept: 'application/json, text/plain;q=0.9',
    'user-agent': 'trainsync',
  };
  const jsonHeaders: Record<string, string> = { ...readHeaders, 'content-type': 'application/json' };
  // The vendor's examples send Content-Length: 0 on bodiless POSTs.
  const emptyHeaders: Record<string, string> = { ...readHeaders, 'content-length': '0' };
  const debug = log.isLevelEnabled('debug');
  /**
   * Set by the first HTTP answer (any status). Until then, a refused connection or a host
   * name that does not resolve is the setting's fault, not an outage: retrying cannot
   * help, so it fails at once, naming the setting (platformUnreachable in errors.ts).
   */
  let answered = false;
  // Unset (the worker): a platform down when the worker starts is an outage like any other,
  // retried, so a queued leaver's change is never failed for good by it.
  const urlSetting = options.urlSetting;

  interface Prepared {
    path: string;
    headers: Record<string, string>;
    body: string | undefined;
  }

  /** What this request sends, built once for all its attempts. */
  function prepare(request: ApiRequest<unknown>): Prepared {
    const path = request.query === undefined || request.query.size === 0 ? `${basePath}${request.path}` : `${basePath}${request.path}?${request.query.toString()}`;
    if (request.json !== undefined) return { path, headers: jsonHeaders, body: JSON.stringify(request.json) };
    if (request.method === 'GET' || request.method === 'DELETE') return { path, headers: readHeaders, body: undefined };
    return { path, headers: emptyHeaders, body: '' };
  }

  /** One exchange under the whole-request timeout; the body is read whatever the status. */
  async function exchange(request: ApiRequest<unknown>, prepared: Prepared, logPath: string): Promise<Answer> {
    const outer = request.signal;
    let timedOut = false;
    let handler: Exchange | undefined;
    const stop = (): void => handler?.stop(new Error(timedOut ? 'timed out' : 'aborted'));
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    if (outer !== undefined && !outer.aborted) outer.addEventListener('abort', stop, { once: true });
    try {
      const dispatcher = ready ?? (await connect());
      const answer = await new Promise<Answer>((resolve, reject) => {
        handler = new Exchange(sent, resolve, reject);
        // Aborted or timed out already (while undici loaded): never written.
        if (timedOut || outer?.aborted) stop();
        dispatcher.dispatch({ method: request.method, path: prepared.path, headers: prepared.headers, body: prepared.body }, handler);
      });
      return answer;
    } catch (error) {
      if (outer?.aborted) throw aborted(request, logPath);
      if (timedOut) throw new PlatformError(`${request.method} ${logPath} timed out (no complete answer within ${timeoutMs} ms)`, { code: 'TIMEOUT', retryable: true });
      throw classifyTransportError(error, request.method, logPath);
    } finally {
      // Any status, even with the body cut short, is an answer from the platform.
      if (handler !== undefined && handler.status !== 0) answered = true;
      clearTimeout(timer);
      outer?.removeEventListener('abort', stop);
    }
  }

  async function attempt<T>(request: ApiRequest<T>, prepared: Prepared, logPath: string, n: number): Promise<T> {
    try {
      await budget.acquire(request.signal);
    } catch (error) {
      if (request.signal?.aborted) throw aborted(request, logPath);
      throw new PlatformError(`${request.method} ${logPath}: the request budget (Redis) is unavailable`, {
        code: 'BUDGET_UNAVAILABLE',
        retryable: true,
        cause: new Error(errorMessage(error)),
      });
    }
    const started = performance.now();
    let status: number | undefined;
    let code: string | undefined;
    if (request.tally !== undefined) request.tally.requests += 1;
    try {
      const response = await exchange(request, prepared, logPath);
      status = response.status;
      if (status >= 200 && status < 300) return request.parse(response.body, status);
      throw classifyResponse({
        method: request.method,
        path: logPath,
        status,
        body: response.body,
        retryAfterMs: parseRetryAfter(response.retryAfter),
      });
    } catch (error) {
      code = error instanceof PlatformError ? error.code : 'UNKNOWN';
      throw error;
    } finally {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      if (tracingOn()) annotate({ [ATTR.httpStatus]: status, [ATTR.platformAttempts]: n });
      const event: RequestEvent = { method: request.method, path: logPath, status, ms, attempt: n, ...(code === undefined ? {} : { code }) };
      // status null (not undefined) so the line always has the field, even for a timeout.
      if (debug) log.debug({ ...event, status: status ?? null }, 'platform request');
      try {
        options.onRequest?.(event);
      } catch {
        // A metrics hook must never fail a request.
      }
    }
  }

  function aborted(request: ApiRequest<unknown>, logPath: string): PlatformError {
    return new PlatformError(`${request.method} ${logPath} was aborted`, { code: 'ABORTED', retryable: true, cause: request.signal?.reason });
  }

  const serverAddress = new URL(origin).hostname;
  /** Traces on: one client span per call, over its budget waits and retries (the key, the query and bodies never in it). */
  function send<T>(request: ApiRequest<T>): Promise<T> {
    if (!tracingOn()) return sendRetrying(request);
    const template = pathTemplate(request.path);
    const attributes = { [ATTR.httpMethod]: request.method, [ATTR.urlTemplate]: template, [ATTR.serverAddress]: serverAddress };
    return inSpan(`${request.method} ${template}`, attributes, () => sendRetrying(request), 'client');
  }

  async function sendRetrying<T>(request: ApiRequest<T>): Promise<T> {
    const logPath = `/api/v2/${request.path}`;
    // Built once per call, not per attempt: the same path, headers and body serve every retry.
    const prepared = prepare(request);
    for (let n = 1; ; n++) {
      try {
        return await attempt(request, prepared, logPath, n);
      } catch (caught) {
        const classified = caught instanceof PlatformError ? caught : classifyTransportError(caught, request.method, logPath);
        const error = answered || urlSetting === undefined ? classified : (platformUnreachable(classified, origin, urlSetting) ?? classified);
        const context = { method: request.method, path: logPath, status: error.status, code: error.code, attempt: n };
        if (!error.retryable || n > retry.retries || request.signal?.aborted) {
          // A documented 400 is a business answer the caller handles (EMAIL_IN_USE…), not an incident;
          // a refused key is reported once, by whoever called (a job's failure, a command's last
          // line, a doctor check); an abort is our own stop (Ctrl-C, shutdown), not a failure.
          const expected = (error.status === 400 && !error.code.startsWith('HTTP_')) || error.code === 'UNAUTHORIZED' || error.code === PLATFORM_UNREACHABLE;
          const level = error.code === 'ABORTED' && request.signal?.aborted ? 'debug' : expected ? 'info' : 'warn';
          log[level]({ ...context, retryable: error.retryable }, `platform request failed: ${error.message}`);
          throw error;
        }
        const rateLimited = error.status === 429;
        // A 429 without Retry-After still earns at least the base delay, for everyone.
        const floor = error.retryAfterMs ?? (rateLimited ? retry.baseDelayMs : undefined);
        const delay = retryDelay(n, retry, floor);
        if (rateLimited) {
          await budget.pauseFor(delay).catch((pauseError: unknown) =>
            log.warn({ err: { message: String(pauseError) } }, 'could not share the rate-limit pause; pausing this process only'),
          );
        }
        log.warn({ ...context, retryInMs: delay }, 'platform request failed; retrying');
        try {
          await sleep(delay, request.signal);
        } catch {
          throw aborted(request, logPath);
        }
      }
    }
  }

  function close(): void {
    // Destroyed, not closed, by the last client of its origin: like the agents before, an
    // idle socket must not hold the process. No request yet: no lease (a pool still being
    // made is destroyed once it is).
    void lease?.release().catch((error: unknown) => log.debug({ err: { message: errorMessage(error) } }, 'closing the platform connection pool'));
    lease = undefined;
    ready = undefined;
  }

  return { origin, send, close };
}
