import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, mapError, type BodyLimit, type MappedError } from './http-error.ts';
import { traceRequests, type RequestTracing } from './request-spans.ts';
import { tracingOn } from '../lib/tracing/spans.ts';

/**
 * Every HTTP server trainsync runs (SCIM, the webhook receiver, /healthz and /metrics, the
 * console) is made here, so they share one set of limits and one error mapping: a slow or
 * stalled client cannot hold a connection for ever (30 s for a whole request, 10 s for its
 * headers), a request the parser cannot read is answered 400 (431 past the parser's limit, 408 when
 * too slow) rather than reset, a URL over `MAX_URL_BYTES` gets 414 and headers over
 * `MAX_HEADER_BYTES` 431, a body over the server's limit gets the same 413 everywhere,
 * an error is answered by `mapError`'s rule (a fault never echoes its message), and closing lets
 * requests in flight finish (their changes are recorded and answered) while idle keep-alive
 * connections go at once, all of them after `forceCloseAfterMs`. Each server's routes are one
 * plugin; only the format of an error's body is its own (SCIM's error schema, the receiver's
 * `{"error"}`, the console's page).
 */

export const REQUEST_TIMEOUT_MS = 30_000;
export const HEADERS_TIMEOUT_MS = 10_000;
export const FORCE_CLOSE_AFTER_MS = 5_000;
/**
 * An idle keep-alive connection is kept this long (Fastify's default): longer than the 60 s idle
 * timeout of the usual load balancers and TLS proxies, so a proxy never reuses a connection the
 * server has just closed (a 502 to the identity provider or the platform).
 */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/**
 * Over the limit, up to this many times the limit is read (and dropped) before the 413, so a
 * client still sending sees the answer rather than a reset; a body larger still is not read to
 * its end: the connection is cut after the 413 (the client may see either).
 */
export const DRAIN_FACTOR = 4;
/** A URL longer than this is refused 414 before any route (the usual proxies' own limit is 8 KiB). */
export const MAX_URL_BYTES = 8 * 1024;
/** Header names and values (the URL apart) past this in all are refused 431 before any route. */
export const MAX_HEADER_BYTES = 16 * 1024;
/**
 * What Node's parser reads of a request line and headers before it gives up (its default is
 * 16 KiB): above the two limits, so a request just over them is still read and answered 414 or
 * 431 in the server's own body format; past this the parser stops and the client gets 431.
 */
export const PARSER_MAX_HEADER_BYTES = 64 * 1024;
/** A connection refused by the parser is given this long to take its answer before it is cut. */
const CLIENT_ERROR_LINGER_MS = 2_000;

/** What a server logs through (pino's Logger fits). */
export interface HttpLog {
  error(fields: Record<string, unknown>, message: string): void;
}

/** An error as a server answers it, for the server to give its body. */
export interface ErrorAnswer extends MappedError {
  /** What was thrown, for a server that words some errors its own way (the console's CSRF page). */
  error: unknown;
}

export interface ErrorBody {
  type: string;
  body: string;
}

export interface HttpServerOptions {
  /** Names the server in log lines: `SCIM`, `webhook receiver`, `health`, `console`. */
  name: string;
  port: number;
  host: string;
  bodyLimit: BodyLimit;
  /**
   * Every body reaches the routes as the Buffer received, whatever its content type (SCIM parses
   * its own JSON, the receiver checks the signature over the exact bytes); otherwise Fastify's
   * parsers (JSON, and the plugins' own: forms) apply.
   */
  rawBodies: boolean;
  /**
   * The proxies (addresses, CIDR ranges) whose `X-Forwarded-*` headers are believed; default none.
   * Never `true`: any client could then choose the address it is seen at.
   */
  trustProxy?: false | readonly string[];
  /** The body of an error answer (status, detail and headers already decided). */
  errorBody(answer: ErrorAnswer): ErrorBody;
  /** The detail of a 500: the server's own fixed words. */
  faultDetail: string;
  /** The detail of a 404 for a path or method no route serves. */
  notFoundDetail: string;
  /** Instead of the 404 with `notFoundDetail`: the server's own answer to a path no route takes (SCIM's names the resources it serves). */
  unrouted?: Unrouted | undefined;
  /** How the router matches paths (default: as Fastify does, case-sensitive). */
  router?: RouterOptions | undefined;
  /** Turns the URL as sent (malformed escapes already escaped) into the URL routed; `request.originalUrl` keeps what was sent. */
  rewriteUrl?: ((url: string) => string) | undefined;
  log: HttpLog;
  forceCloseAfterMs?: number;
  /** Traces on: each request is a server span named this way (SCIM and webhooks; health and the console are not traced). */
  traced?: RequestTracing | undefined;
}

export interface HttpServer {
  port: number;
  /** The interface it listens on, as bound (`127.0.0.1`, `0.0.0.0`, `::1`…). */
  address: string;
  close(): Promise<void>;
}

/**
 * A server's routes, hooks and decorations: registered through fastify-plugin, so they apply to
 * the server itself (not an encapsulated child) and its hooks see every request, 404s included.
 */
export type ServerPlugin = (server: FastifyInstance) => Promise<void>;

/** The router's options a server may set (find-my-way's, through Fastify's `routerOptions`). */
export interface RouterOptions {
  /** false: `/users` is `/Users` (path parameters keep their case). */
  caseSensitive?: boolean;
  /** `/Users/` is `/Users`. */
  ignoreTrailingSlash?: boolean;
  /** `//Users` is `/Users`. */
  ignoreDuplicateSlashes?: boolean;
  /** A path parameter longer than this is refused 414 by the router (Fastify's default: 100 characters). */
  maxParamLength?: number;
}

/** A server as a wing defines it: where and how it serves (the shared factory's options), and its routes. */
export interface ServerDefinition {
  options: HttpServerOptions;
  plugin: ServerPlugin;
}

/** What answers a request no route takes (a method Fastify does not route, e.g. PROPFIND): by default a 404 through the mapping. */
export type Unrouted = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** Reads and drops what is left of a body over the limit, up to `DRAIN_FACTOR` times it; false when the rest is larger (the connection is then cut). */
function drainRest(req: IncomingMessage, limit: number): Promise<boolean> {
  if (req.complete || req.readableEnded || req.destroyed) return Promise.resolve(true);
  if (Number(req.headers['content-length'] ?? 0) > limit * DRAIN_FACTOR) return Promise.resolve(false);
  return new Promise((resolve) => {
    let size = 0;
    const done = (drained: boolean): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      req.off('close', onEnd);
      resolve(drained);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit * DRAIN_FACTOR) done(false);
    };
    const onEnd = (): void => done(true);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onEnd);
    req.on('close', onEnd);
    req.resume();
  });
}

/**
 * The URL the router sees: a path with a malformed %-escape (`/Users/%E0%A4%A`) has its `%`s
 * escaped, so it reaches the server's own routes (which say what it names, as SCIM says 404)
 * rather than a refusal before them; `request.originalUrl` keeps what was sent.
 */
export function routableUrl(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (!path.includes('%')) return url;
  try {
    decodeURI(path);
    return url;
  } catch {
    return `${path.replaceAll('%', '%25')}${url.slice(path.length)}`;
  }
}

/** A URL or headers over the limits: the refusal, or undefined. The request line and headers are all read by now (under `PARSER_MAX_HEADER_BYTES`). */
export function oversizeRefusal(req: IncomingMessage): HttpError | undefined {
  if (Buffer.byteLength(req.url ?? '') > MAX_URL_BYTES) return new HttpError(414, `the URL is over ${MAX_URL_BYTES} bytes`, { connection: 'close' });
  let size = 0;
  for (const part of req.rawHeaders) size += Buffer.byteLength(part);
  return size > MAX_HEADER_BYTES ? new HttpError(431, `the headers are over ${MAX_HEADER_BYTES} bytes`, { connection: 'close' }) : undefined;
}

/**
 * Answers on the connection itself, outside Fastify (what the parser refused, a CONNECT), in the
 * server's body format, then closes it: the rest of what the client sends is read and dropped
 * meanwhile, so it sees the answer and a clean close rather than a reset.
 */
function answerOnSocket(socket: Socket, answer: ErrorAnswer, errorBody: HttpServerOptions['errorBody']): void {
  const { type, body } = errorBody(answer);
  const bytes = Buffer.from(body);
  const extra = Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.on('error', () => undefined);
  socket.resume();
  const linger = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
  socket.end(`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\nContent-Type: ${type}\r\nContent-Length: ${bytes.length}\r\n${extra}Connection: close\r\n\r\n${body}`);
}

/**
 * What the parser refused (a request it cannot read, one past its size limit, one too slow) is
 * answered as Node itself would (400, 431, 408), in the server's format; a connection already
 * gone is only destroyed.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket, errorBody: HttpServerOptions['errorBody']): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const detail =
    status === 431 ? `the request line and headers are over ${PARSER_MAX_HEADER_BYTES} bytes` : status === 408 ? 'the request took too long to arrive' : 'the request is not valid HTTP/1.1';
  answerOnSocket(socket, { status, detail, headers: {}, fault: false, error }, errorBody);
}

/** Builds a server, applies its plugin and listens where the options say. */
export async function startHttpServer({ options, plugin }: ServerDefinition): Promise<HttpServer> {
  // Loaded by the first server a process starts: a command that serves nothing (most of them)
  // never initialises Fastify and its plugins (~40 ms of every CLI start otherwise).
  const [{ default: Fastify }, { default: fastifyPlugin }] = await Promise.all([import('fastify'), import('fastify-plugin')]);
  const server = Fastify({
    logger: false,
    trustProxy: options.trustProxy ? [...options.trustProxy] : false,
    bodyLimit: options.bodyLimit.bytes,
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    http: { headersTimeout: HEADERS_TIMEOUT_MS, maxHeaderSize: PARSER_MAX_HEADER_BYTES },
    clientErrorHandler: (error, socket) => answerClientError(error, socket, options.errorBody),
    exposeHeadRoutes: false,
    ...(options.router ? { routerOptions: { ...options.router } } : {}),
    rewriteUrl: (req) => {
      const url = routableUrl(req.url ?? '/');
      return options.rewriteUrl ? options.rewriteUrl(url) : url;
    },
    // What the router still refuses (an over-long path parameter, an absolute URL it cannot read): answered through the same mapping.
    frameworkErrors: (error, request, reply) => answerError(error, request, reply),
  });

  const answerError = async (thrown: unknown, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    // The router's own refusal of a URL too long to route is the 414 it is.
    const error = oversizeRefusal(request.raw) ?? thrown;
    const mapped = mapError(error, options.bodyLimit, options.faultDetail);
    if (mapped.fault) options.log.error({ err: error, method: request.method, url: request.url }, `${options.name} request failed: answered ${mapped.status}`);
    if (mapped.status === 413 && !(await drainRest(request.raw, options.bodyLimit.bytes))) {
      // Far over the limit: the rest is not read; the connection goes once the 413 is written.
      reply.raw.once('finish', () => request.raw.socket?.destroySoon());
    }
    const { type, body } = options.errorBody({ ...mapped, error });
    // A Buffer: Fastify sends the type as the server gave it (no charset added to a JSON type).
    return reply.code(mapped.status).headers(mapped.headers).type(type).send(Buffer.from(body));
  };

  // No server of ours is a proxy: CONNECT (which Node hands over as a bare socket, and without a
  // listener resets) is refused like any method not served.
  server.server.on('connect', (_request: IncomingMessage, socket: Socket) =>
    answerOnSocket(socket, { status: 405, detail: 'CONNECT is not served here', headers: {}, fault: false, error: undefined }, options.errorBody),
  );

  if (options.rawBodies) {
    server.removeAllContentTypeParsers();
    server.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  }
  // Before every other hook and route: the span covers the whole request, refusals included.
  if (options.traced !== undefined && tracingOn()) traceRequests(server, options.name, options.traced);
  server.setErrorHandler((error, request, reply) => answerError(error, request, reply));
  // First of every server's hooks: nothing of a server's own (a session lookup, a signature) runs for an over-long request.
  server.addHook('onRequest', async (request) => {
    const refusal = oversizeRefusal(request.raw);
    if (refusal) throw refusal;
  });
  const unrouted = options.unrouted;
  server.setNotFoundHandler(
    unrouted ??
      (() => {
        throw new HttpError(404, options.notFoundDetail);
      }),
  );
  // On the server itself, not an encapsulated child: its hooks, error formats and 404 apply to every request.
  await server.register(fastifyPlugin(plugin, { name: `${options.name} routes`, fastify: '5.x' }));

  await server.listen({ port: options.port, host: options.host });
  const { port, address } = server.server.address() as AddressInfo;
  return {
    port,
    address,
    close: async () => {
      // Fastify closes idle keep-alive connections at once and answers new requests 503; the rest are cut after the grace.
      const force = setTimeout(() => server.server.closeAllConnections(), options.forceCloseAfterMs ?? FORCE_CLOSE_AFTER_MS);
      try {
        await server.close();
      } finally {
        clearTimeout(force);
      }
    },
  };
}
