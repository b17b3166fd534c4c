import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { DEFAULT_SIZES, generateState, type SimulatorSizes } from './dataset.ts';
import { faultsPatchSchema, NO_FAULTS, type SimulatorFaults } from './faults.ts';
import { pushRecord, summariseRequests, type RequestRecord } from './request-log.ts';
import type { Reply, RouteRequest } from './reply.ts';
import { invalidModel, json } from './reply.ts';
import { ROUTES } from './routes.ts';
import type { Runtime } from './runtime.ts';
import type { DateBoundsMode, SimulatorState } from './state.ts';
import { allResults, updateResult } from './state.ts';
import { z } from 'zod';
import { createWebhookSender, handleWebhookAdmin, type WebhookSender, type WebhookSettings } from './webhooks.ts';

/**
 * A faithful simulator of the training platform's API v2 over node:http, for the
 * demo, development and tests. Data is generated from a seed and lives in memory;
 * provisioning calls change it, tests mutate it through the helpers in state.ts,
 * and faults (latency, 429s, 5xx, malformed records, drift, odd next links) can be
 * switched on in-process (`setFaults`) or over HTTP (`POST /__simulator/faults`).
 */

export type { SimulatorSizes } from './dataset.ts';
export { DEFAULT_SIZES, ORG_EMAIL_DOMAIN, generateState } from './dataset.ts';
export type { SimulatorFaults } from './faults.ts';
export { NO_FAULTS } from './faults.ts';
export type { RequestRecord, RequestsSummary } from './request-log.ts';
export { maxInWindow, summariseRequests, writeCallCount } from './request-log.ts';
export { FOREIGN_EMAIL_DOMAIN, passwordProblems } from './routes-provisioning.ts';
export { PAGE_SIZE } from './routes-reporting.ts';
export type { CompleteCourseRequest, Completion, DeliveryRecord, WebhookSender, WebhookSettings } from './webhooks.ts';
export type { ResultsQuery } from './results-query.ts';
export { parseBound, queryResults } from './results-query.ts';
export type {
  ApiCourse,
  ApiCourseCategory,
  ApiFilter,
  ApiFilterAnswer,
  ApiGroupCourse,
  ApiResult,
  ApiUser,
  DateBoundsMode,
  SimGroup,
  SimulatorState,
  UserAccount,
} from './state.ts';
export {
  addCourse,
  addFilter,
  addGroup,
  addResult,
  allResults,
  findGroup,
  findUser,
  getResult,
  groupMembers,
  markChanged,
  removeCourse,
  removeFilter,
  removeGroup,
  removeResult,
  seatsInUse,
  setGroupMember,
  setUserAccess,
  setUserLocked,
  updateCourse,
  updateGroup,
  updateResult,
  userAccount,
} from './state.ts';

/** The key the simulator accepts when none is configured. Not a secret. */
export const DEMO_API_KEY = 'demo-key-not-secret';

export interface SimulatorOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0: a random free port. */
  port?: number;
  /** Default 1. */
  seed?: number;
  /** Default DEMO_API_KEY. */
  apiKey?: string;
  sizes?: Partial<SimulatorSizes>;
  faults?: Partial<SimulatorFaults>;
  /** Default users + 50. */
  totalSeats?: number;
  /** Default true; false => GET users/seats answers 400 NO_UNLIMITED_PLAN. */
  unlimitedPlan?: boolean;
  /** Default true; false => GET /api/v2/users answers 404 (a platform without it). */
  usersEndpoint?: boolean;
  /** Default true; false => GET /api/v2/groups answers 404 (a platform without it). */
  groupsEndpoint?: boolean;
  /** How startDate/endDate select dateCompleted. Default 'exclusive-instant'. */
  dateBounds?: DateBoundsMode;
  /** Signed webhook deliveries (src/simulator/webhooks.ts); none are sent until a URL is set. */
  webhooks?: Partial<WebhookSettings>;
}

export interface RunningSimulator {
  /** e.g. http://127.0.0.1:43123 (no trailing slash). */
  url: string;
  port: number;
  apiKey: string;
  /** The live data. */
  state: SimulatorState;
  /** Every request received, in order (the last 200,000). The array is never replaced. */
  requests: RequestRecord[];
  /** Merges faults and restarts their counters, so "every Nth" counts from the next request. */
  setFaults(f: Partial<SimulatorFaults>): void;
  readonly faults: Readonly<SimulatorFaults>;
  resetRequests(): void;
  /** Completes courses and delivers their webhook events (also over HTTP: `/__simulator/webhooks/*`). */
  webhooks: WebhookSender;
  close(): Promise<void>;
}

const API_PREFIX = /^\/api\/v2(\/|$)/i;
const MAX_BODY = 1024 * 1024;

function send(res: http.ServerResponse, reply: Reply): void {
  const headers: Record<string, string | number> = { ...reply.headers };
  if (reply.body !== undefined && reply.status !== 204) {
    headers['content-type'] = reply.contentType ?? 'application/octet-stream';
    headers['content-length'] = typeof reply.body === 'string' ? Buffer.byteLength(reply.body) : reply.body.length;
    res.writeHead(reply.status, headers);
    res.end(reply.body);
  } else {
    if (reply.status !== 204) headers['content-length'] = 0;
    res.writeHead(reply.status, headers);
    res.end();
  }
}

/** 5xx answers a gateway or a crashed app might give: none has the documented error shape. */
function serverError(n: number): Reply {
  switch (n % 3) {
    case 0:
      return { status: 500, body: '<html><body><h1>500 Internal Server Error</h1></body></html>', contentType: 'text/html' };
    case 1:
      return { status: 502, body: 'Bad Gateway', contentType: 'text/plain' };
    default:
      return json({ message: 'Service Unavailable', status: 503 }, 503);
  }
}

function readBody(req: http.IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Starts the simulator; resolves once it listens. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const host = options.host ?? '127.0.0.1';
  const apiKey = options.apiKey ?? DEMO_API_KEY;
  const expectedAuth = `bearer ${apiKey}`;
  const sizes: SimulatorSizes = { ...DEFAULT_SIZES, ...options.sizes };
  const state = generateState({
    seed: options.seed ?? 1,
    sizes,
    ...(options.totalSeats === undefined ? {} : { totalSeats: options.totalSeats }),
    unlimitedPlan: options.unlimitedPlan ?? true,
    usersEndpoint: options.usersEndpoint ?? true,
    groupsEndpoint: options.groupsEndpoint ?? true,
    dateBounds: options.dateBounds ?? 'exclusive-instant',
  });
  const rt: Runtime = { state, faults: { ...NO_FAULTS, ...options.faults }, port: 0, resultsPagesServed: 0, resultsRemoved: 0 };
  const webhooks = createWebhookSender(state, options.webhooks);
  const requests: RequestRecord[] = [];
  let apiCount = 0;

  const setFaults = (f: Partial<SimulatorFaults>): void => {
    rt.faults = { ...rt.faults, ...f };
    apiCount = 0;
    rt.resultsPagesServed = 0;
    rt.resultsRemoved = 0;
  };

  const admin = async (req: http.IncomingMessage, method: string, path: string): Promise<Reply> => {
    if (path.startsWith('/__simulator/webhooks/')) {
      return handleWebhookAdmin(webhooks, method, path, new URL(req.url ?? '/', 'http://simulator').searchParams, await readBody(req));
    }
    if (method === 'POST' && path === '/__simulator/faults') {
      const raw = await readBody(req);
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw?.toString('utf8') || '{}');
      } catch {
        return invalidModel([{ field: 'body', message: 'not valid JSON' }]);
      }
      const patch = faultsPatchSchema.safeParse(parsed);
      if (!patch.success) return invalidModel(patch.error.issues.map((i) => ({ field: i.path.join('.') || 'body', message: i.message })));
      const clean: Partial<SimulatorFaults> = {};
      for (const [k, v] of Object.entries(patch.data)) if (v !== undefined) Object.assign(clean, { [k]: v });
      setFaults(clean);
      return json(rt.faults);
    }
    if (method === 'GET' && path === '/__simulator/faults') return json(rt.faults);
    if (method === 'GET' && path === '/__simulator/requests/summary') return json(summariseRequests(requests));
    if (method === 'GET' && path === '/__simulator/requests/arrivals') return json(requests.map((r) => ({ at: r.at, route: r.route })));
    if (method === 'POST' && path === '/__simulator/requests/reset') {
      requests.length = 0;
      return { status: 204 };
    }
    if (method === 'POST' && path === '/__simulator/results/mutate') {
      // For benchmarks in another process: change the score of every Nth result.
      const raw = await readBody(req);
      const body = z.object({ fraction: z.number().min(0).max(1) }).safeParse(JSON.parse(raw?.toString('utf8') || '{}'));
      if (!body.success) return invalidModel([{ field: 'fraction', message: 'a number from 0 to 1' }]);
      const every = body.data.fraction > 0 ? Math.max(1, Math.round(1 / body.data.fraction)) : 0;
      let changed = 0;
      if (every > 0) {
        for (const result of allResults(state).filter((_, index) => index % every === 0)) {
          updateResult(state, result.id, { score: (result.score ?? 0) + 1 });
          changed += 1;
        }
      }
      return json({ changed });
    }
    if (method === 'GET' && path === '/__simulator/state/summary') {
      return json({
        organisationId: state.organisationId,
        courses: state.courses.length,
        filters: state.filters.length,
        users: state.users.length,
        groups: state.groups.length,
        results: state.results.length,
        undatedResults: state.undatedResults.length,
        seatsInUse: state.users.filter((u) => u.hasAccess).length,
        totalSeats: state.seats.totalSeats,
        version: state.version,
      });
    }
    return { status: 404 };
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const rawQuery = q < 0 ? '' : url.slice(q + 1);

    if (path.startsWith('/__simulator/')) {
      send(res, await admin(req, method, path));
      return;
    }

    const authorization = req.headers.authorization;
    const authorized = authorization !== undefined && authorization.trim().toLowerCase() === expectedAuth.toLowerCase() && authorization.trim().slice(7) === apiKey;
    const record: RequestRecord = {
      at: performance.timeOrigin + performance.now(),
      method,
      path,
      query: rawQuery,
      status: 0,
      authorized,
      route: `${method} ${path}`,
      ...(authorization === undefined ? {} : { authorization }),
    };
    pushRecord(requests, record);

    let body: unknown;
    let bodyProblem: Reply | undefined;
    if (method === 'GET' || method === 'HEAD') {
      req.resume();
    } else {
      const raw = await readBody(req);
      if (raw === undefined) bodyProblem = invalidModel([{ field: 'body', message: 'The body is too large.' }]);
      else if (raw.length > 0) {
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          bodyProblem = invalidModel([{ field: 'body', message: 'The body is not valid JSON.' }]);
        }
      }
    }

    const reply = ((): Reply => {
      if (!API_PREFIX.test(path)) return { status: 404 };
      if (!authorized) return json({ code: 'UNAUTHORIZED', message: 'A valid API key is required: send Authorization: Bearer <key>.' }, 401);
      apiCount++;
      const { rateLimitEvery, serverErrorEvery } = rt.faults;
      if (rateLimitEvery > 0 && apiCount % rateLimitEvery === 0) {
        return { status: 429, body: 'Too Many Requests', contentType: 'text/plain', headers: { 'retry-after': rt.faults.retryAfter } };
      }
      if (serverErrorEvery > 0 && apiCount % serverErrorEvery === 0) return serverError(apiCount / serverErrorEvery - 1);
      let allowed: string[] | undefined;
      for (const route of ROUTES) {
        const m = route.re.exec(path);
        if (!m) continue;
        if (route.method !== method) {
          (allowed ??= []).push(route.method);
          continue;
        }
        record.route = `${method} ${route.template}`;
        if (bodyProblem) return bodyProblem;
        const routeReq: RouteRequest = {
          method,
          path,
          params: m.slice(1),
          query: new URLSearchParams(rawQuery),
          rawQuery,
          origin: `http://${req.headers.host ?? `${host}:${rt.port}`}`,
          body,
        };
        return route.handle(rt, routeReq) ?? { status: 404 };
      }
      if (allowed) return { status: 405, headers: { allow: allowed.join(', ') } };
      return { status: 404 };
    })();

    record.status = reply.status;
    const latency = rt.faults.latencyMs;
    if (latency > 0) setTimeout(() => send(res, reply), latency);
    else send(res, reply);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, { status: 500, body: `simulator error: ${String(error)}`, contentType: 'text/plain' });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 30_000;
  server.on('clientError', (_err, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  rt.port = port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    port,
    apiKey,
    state,
    requests,
    setFaults,
    get faults() {
      return rt.faults;
    },
    webhooks,
    resetRequests: () => {
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        webhooks.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
