import { errorMessage } from '../lib/errors.ts';
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { got, type CancelableRequest, type Got, type OptionsInit, type Response } from 'got';
import type { Logger } from 'pino';
import { classifyResponse, classifyTransportError, PlatformError } from './errors.ts';
import type { RequestBudget } from './request-budget.ts';
import { tallyRequest } from './request-tally.ts';
import { parseRetryAfter, retryDelay, sleep, type RetryPolicy } from './retry.ts';
import type { RequestEvent } from './types.ts';

/**
 * The one place HTTP happens. Every attempt takes a token from the shared budget, is
 * logged as `{method, path, status, ms, attempt}` (never the key, the query or a body),
 * and is classified; our retry loop replaces got's so each retry obeys the budget too.
 *
 * Set up for the hot path (a results walk sends thousands of GETs a minute): one got
 * instance extended once with everything that does not change, and each GET passes a
 * finished URL string and no options object, so got merges nothing per request; no
 * hooks; keep-alive agents of our own with a socket for every request one process can
 * have in flight; the body read as text once and parsed by the caller once.
 */

/**
 * Sockets per origin: every window (TRAINSYNC_RESULTS_CONCURRENCY) of every job
 * (TRAINSYNC_WORKER_CONCURRENCY) with its pages read ahead stays on an open connection.
 */
export const MAX_SOCKETS = 64;

export interface TransportOptions {
  /** The configured base, e.g. `http://127.0.0.1:4000`; `/api/v2/` is appended. */
  apiUrl: string;
  apiKey: string;
  log: Logger;
  budget: RequestBudget;
  retry: RetryPolicy;
  timeoutMs: number;
  connectTimeoutMs: number;
  onRequest?: ((event: RequestEvent) => void) | undefined;
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

export function createTransport(options: TransportOptions): Transport {
  const { origin, prefixUrl } = apiBase(options.apiUrl);
  const { log, budget, retry } = options;
  // Node's global agent would do keep-alive too, but shares its sockets with every other
  // client in the process and has no socket limit of ours.
  const agentOptions: http.AgentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS, scheduling: 'lifo', timeout: 5_000 };
  const agent = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  const client: Got = got.extend({
    agent,
    timeout: { connect: options.connectTimeoutMs, request: options.timeoutMs },
    // Our loop retries, so that every attempt passes through the shared budget.
    retry: { limit: 0 },
    throwHttpErrors: false,
    // A redirect could carry the key to another host; the API documents none.
    followRedirect: false,
    responseType: 'text',
    headers: {
      authorization: `Bearer ${options.apiKey}`,
      accept: 'application/json, text/plain;q=0.9',
      'user-agent': 'trainsync',
    },
  });
  const debug = log.isLevelEnabled('debug');

  /** Only what this request adds to the instance's defaults; undefined for a plain GET. */
  function optionsFor(request: ApiRequest<unknown>): OptionsInit | undefined {
    const bodiless = request.json === undefined && request.method !== 'GET' && request.method !== 'DELETE';
    if (request.method === 'GET' && request.signal === undefined) return undefined;
    return {
      method: request.method,
      ...(request.json === undefined ? {} : { json: request.json }),
      // The vendor's examples send Content-Length: 0 on bodiless POSTs.
      ...(bodiless ? { body: '', headers: { 'content-length': '0' } } : {}),
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    };
  }

  async function attempt<T>(request: ApiRequest<T>, url: string, requestOptions: OptionsInit | undefined, logPath: string, n: number): Promise<T> {
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
    tallyRequest();
    try {
      let response: Response<string>;
      try {
        // 'finish': the request has been handed to the OS; the budget spaces this process's next grant from there.
        const pending = client(url, requestOptions) as CancelableRequest<Response<string>>;
        response = await pending.on('request', (sent: http.ClientRequest) => sent.once('finish', () => budget.sent?.()));
      } catch (error) {
        throw classifyTransportError(error, request.method, logPath);
      }
      status = response.statusCode;
      if (status >= 200 && status < 300) return request.parse(response.body, status);
      throw classifyResponse({
        method: request.method,
        path: logPath,
        status,
        body: response.body,
        retryAfterMs: parseRetryAfter(response.headers['retry-after']),
      });
    } catch (error) {
      code = error instanceof PlatformError ? error.code : 'UNKNOWN';
      throw error;
    } finally {
      const ms = Math.round((performance.now() - started) * 10) / 10;
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

  async function send<T>(request: ApiRequest<T>): Promise<T> {
    const logPath = `/api/v2/${request.path}`;
    // Built once per call, not per attempt: the same URL and options serve every retry.
    const url = request.query === undefined || request.query.size === 0 ? `${prefixUrl}${request.path}` : `${prefixUrl}${request.path}?${request.query.toString()}`;
    const requestOptions = optionsFor(request);
    for (let n = 1; ; n++) {
      try {
        return await attempt(request, url, requestOptions, logPath, n);
      } catch (caught) {
        const error = caught instanceof PlatformError ? caught : classifyTransportError(caught, request.method, logPath);
        const context = { method: request.method, path: logPath, status: error.status, code: error.code, attempt: n };
        if (!error.retryable || n > retry.retries || request.signal?.aborted) {
          // A documented 400 is a business answer the caller handles (EMAIL_IN_USE…), not an incident.
          const expected = error.status === 400 && !error.code.startsWith('HTTP_');
          log[expected ? 'info' : 'warn']({ ...context, retryable: error.retryable }, `platform request failed: ${error.message}`);
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
    agent.http.destroy();
    agent.https.destroy();
  }

  return { origin, send, close };
}
