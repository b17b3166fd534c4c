import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { handleAdmin } from './admin.ts';
import { DEFAULT_SIZES, generateState, ORG_EMAIL_DOMAIN, type SimulatorSizes } from './dataset.ts';
import { NO_FAULTS, type SimulatorFaults } from './faults.ts';
import { applyOverlap, type OrganisationOptions, type Overlap, type OverlapOptions, type SimOrganisation } from './organisations.ts';
import { KeyArrivals, pushRecord, requestsByOrganisation, type OrganisationRequests, type RequestRecord } from './request-log.ts';
import type { Reply, RouteRequest } from './reply.ts';
import { invalidModel, json } from './reply.ts';
import { ROUTES } from './routes.ts';
import type { ResultChanges, Runtime } from './runtime.ts';
import type { DateBoundsMode, SimulatorState } from './state.ts';
import { createWebhookSender, type WebhookSender, type WebhookSettings } from './webhooks.ts';

/**
 * A faithful simulator of the training platform's API v2 over node:http, for the
 * demo, development and tests. Data is generated from a seed and lives in memory;
 * provisioning calls change it, tests mutate it through the helpers in state.ts,
 * and faults (latency, 429s, 5xx, malformed records, drift, odd next links) can be
 * switched on in-process (`setFaults`) or over HTTP (`POST /__simulator/faults`).
 * It serves one organisation by default, or several (`organisations`), one per key:
 * each request sees only the data of its key's organisation.
 */

export type { SimulatorSizes } from './dataset.ts';
export { DEFAULT_SIZES, ORG_EMAIL_DOMAIN, generateState } from './dataset.ts';
export type { ArrivalPlace, RemovalPlace, SimulatorFaults } from './faults.ts';
export type { ResultChanges } from './runtime.ts';
export { NO_FAULTS } from './faults.ts';
export type { OrganisationRequests, RequestRecord, RequestsSummary } from './request-log.ts';
export { maxInWindow, requestsByOrganisation, summariseRequests, writeCallCount } from './request-log.ts';
export type { OrganisationOptions, Overlap, OverlapOptions, SimOrganisation } from './organisations.ts';
export { selectOrganisation } from './admin.ts';
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
  /** Default 1. With `organisations`, the first's seed; the others count on from it. */
  seed?: number;
  /** Default DEMO_API_KEY. Not with `organisations` (each names its own). */
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
  /**
   * Signed webhook deliveries (src/simulator/webhooks.ts); none are sent until a URL is set.
   * With `organisations`, the defaults of each (its own `webhooks` win), except the secret:
   * an organisation signs with its own, given or generated.
   */
  webhooks?: Partial<WebhookSettings>;
  /**
   * Several organisations, one per key. The options above (but apiKey) are each one's
   * defaults. Without it: one organisation with `apiKey`, exactly as before.
   */
  organisations?: OrganisationOptions[];
  /** Shared course GUIDs and a user in two organisations (needs two organisations or more). */
  overlap?: boolean | OverlapOptions;
}

export interface RunningSimulator {
  /** e.g. http://127.0.0.1:43123 (no trailing slash). */
  url: string;
  port: number;
  /** The first organisation's key. */
  apiKey: string;
  /** The first organisation's live data. */
  state: SimulatorState;
  /** Every organisation, in the order given (one when `organisations` was not). */
  organisations: readonly SimOrganisation[];
  /** An organisation by name, GUID or key; throws when there is none. */
  organisation(ref: string): SimOrganisation;
  /** What the overlap option made; undefined without it. */
  overlap: Overlap | undefined;
  /** Every request received, in order (the last 200,000). The array is never replaced. */
  requests: RequestRecord[];
  /** TCP connections accepted so far (clients that share sockets open fewer). */
  connections(): number;
  /** Each organisation's (key's) authorised requests, keyed by its GUID. */
  requestsByOrganisation(windowMs?: number): Record<string, OrganisationRequests>;
  /** Merges faults and restarts their counters, so "every Nth" counts from the next request. */
  setFaults(f: Partial<SimulatorFaults>): void;
  /**
   * The ids of the results the arrival and removal faults added and deleted in an
   * organisation (default: the first) since the faults were last set, in order (also
   * over HTTP: `GET /__simulator/results/changes?org=`). Read it before setting the
   * faults again: that starts a new record.
   */
  resultChanges(org?: string): Readonly<ResultChanges>;
  readonly faults: Readonly<SimulatorFaults>;
  resetRequests(): void;
  /** The first organisation's webhooks: completes courses and delivers their events (also over HTTP: `/__simulator/webhooks/*`). */
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

/** Each organisation's full options: the top-level ones are the defaults, and one organisation (DEMO_API_KEY) without a list. */
function organisationSpecs(options: SimulatorOptions): Array<OrganisationOptions & { seed: number }> {
  const base = options.seed ?? 1;
  const { secret: _sharedSecret, ...sharedWebhooks } = options.webhooks ?? {};
  const defaults = {
    sizes: options.sizes,
    totalSeats: options.totalSeats,
    unlimitedPlan: options.unlimitedPlan,
    usersEndpoint: options.usersEndpoint,
    groupsEndpoint: options.groupsEndpoint,
    dateBounds: options.dateBounds,
  };
  if (options.organisations === undefined) {
    return [{ ...defaults, apiKey: options.apiKey ?? DEMO_API_KEY, seed: base, ...(options.webhooks === undefined ? {} : { webhooks: options.webhooks }) }];
  }
  if (options.apiKey !== undefined) throw new Error('apiKey and organisations do not go together: give each organisation its key');
  if (options.organisations.length === 0) throw new Error('organisations is empty: give one at least');
  const keys = new Set(options.organisations.map((o) => o.apiKey));
  if (keys.size !== options.organisations.length) throw new Error('two organisations have the same apiKey: a key belongs to one organisation');
  return options.organisations.map((o, i) => ({
    ...defaults,
    ...o,
    sizes: { ...options.sizes, ...o.sizes },
    seed: o.seed ?? base + i,
    emailDomain: o.emailDomain ?? (i === 0 ? ORG_EMAIL_DOMAIN : `@org${i + 1}.acme-training.example`),
    webhooks: { ...sharedWebhooks, ...o.webhooks },
  }));
}

/** The organisation an Authorization header's key belongs to ('Bearer <key>', the scheme in any case). */
function organisationOf(byKey: ReadonlyMap<string, SimOrganisation>, authorization: string | undefined): SimOrganisation | undefined {
  if (authorization === undefined) return undefined;
  const value = authorization.trim();
  if (value.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  return byKey.get(value.slice(7));
}

/** Starts the simulator; resolves once it listens. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const host = options.host ?? '127.0.0.1';
  const specs = organisationSpecs(options);
  const states = specs.map((spec) =>
    generateState({
      seed: spec.seed,
      sizes: { ...DEFAULT_SIZES, ...spec.sizes },
      ...(spec.totalSeats === undefined ? {} : { totalSeats: spec.totalSeats }),
      unlimitedPlan: spec.unlimitedPlan ?? true,
      usersEndpoint: spec.usersEndpoint ?? true,
      groupsEndpoint: spec.groupsEndpoint ?? true,
      dateBounds: spec.dateBounds ?? 'exclusive-instant',
      ...(spec.id === undefined ? {} : { organisationId: spec.id }),
      ...(spec.emailDomain === undefined ? {} : { emailDomain: spec.emailDomain }),
    }),
  );
  if (new Set(states.map((s) => s.organisationId)).size !== states.length) throw new Error('two organisations have the same id');
  const overlap = options.overlap === undefined || options.overlap === false ? undefined : applyOverlap(states, options.overlap === true ? {} : options.overlap);
  const organisations: SimOrganisation[] = specs.map((spec, index) => {
    const state = states[index]!;
    return { index, id: state.organisationId, name: spec.name ?? `Organisation ${index + 1}`, apiKey: spec.apiKey, state, webhooks: createWebhookSender(state, spec.webhooks) };
  });
  const byKey = new Map(organisations.map((o) => [o.apiKey, o]));
  const initialFaults: SimulatorFaults = { ...NO_FAULTS, ...options.faults };
  // One runtime per organisation (its data and fault counters); the faults are the server's.
  const runtimes: Runtime[] = states.map((state) => ({ state, faults: initialFaults, port: 0, resultsPagesServed: 0, resultsRemoved: 0, resultChanges: { added: [], removed: [] }, platform: states }));
  const requests: RequestRecord[] = [];
  const keyArrivals = new KeyArrivals();
  let apiCount = 0;

  const setFaults = (f: Partial<SimulatorFaults>): void => {
    const next = { ...runtimes[0]!.faults, ...f };
    for (const rt of runtimes) {
      rt.faults = next;
      rt.resultsPagesServed = 0;
      rt.resultsRemoved = 0;
      rt.resultChanges = { added: [], removed: [] };
    }
    apiCount = 0;
  };
  const resultChanges = (org: SimOrganisation): Readonly<ResultChanges> => runtimes[org.index]!.resultChanges;
  const adminContext = { organisations, overlap, requests, keyArrivals, faults: () => runtimes[0]!.faults, setFaults, resultChanges };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const rawQuery = q < 0 ? '' : url.slice(q + 1);

    if (path.startsWith('/__simulator/')) {
      send(res, await handleAdmin(adminContext, method, path, new URLSearchParams(rawQuery), () => readBody(req)));
      return;
    }

    const authorization = req.headers.authorization;
    const org = organisationOf(byKey, authorization);
    const record: RequestRecord = {
      at: performance.timeOrigin + performance.now(),
      method,
      path,
      query: rawQuery,
      status: 0,
      authorized: org !== undefined,
      route: `${method} ${path}`,
      ...(org === undefined ? {} : { organisationId: org.id }),
      ...(authorization === undefined ? {} : { authorization }),
    };
    pushRecord(requests, record);
    if (org !== undefined) keyArrivals.add(org.id, record.at);

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
      if (!org) return json({ code: 'UNAUTHORIZED', message: 'A valid API key is required: send Authorization: Bearer <key>.' }, 401);
      const rt = runtimes[org.index]!;
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
    const latency = runtimes[0]!.faults.latencyMs;
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
  let accepted = 0;
  server.on('connection', () => (accepted += 1));
  server.on('clientError', (_err, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  for (const rt of runtimes) rt.port = port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const first = organisations[0]!;
  const findOrganisation = (ref: string): SimOrganisation => {
    const found = byKey.get(ref) ?? organisations.find((o) => o.id === ref.toLowerCase() || o.name === ref);
    if (!found) throw new Error(`no organisation ${ref}`);
    return found;
  };

  return {
    url: `http://${urlHost}:${port}`,
    port,
    apiKey: first.apiKey,
    state: first.state,
    organisations,
    organisation: findOrganisation,
    overlap,
    requests,
    connections: () => accepted,
    requestsByOrganisation: (windowMs?: number) => requestsByOrganisation(requests, windowMs),
    setFaults,
    resultChanges: (ref?: string) => resultChanges(ref === undefined ? first : findOrganisation(ref)),
    get faults() {
      return runtimes[0]!.faults;
    },
    webhooks: first.webhooks,
    resetRequests: () => {
      requests.length = 0;
      keyArrivals.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const o of organisations) o.webhooks.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
