import { TrainsyncError } from './errors.ts';

/**
 * Turns "Postgres/Redis is down or misconfigured" into one line an operator can act
 * on: which service, which setting, the URL with its password masked, and what to
 * check. Anything that is not a connection or login problem gets `undefined`, so
 * callers rethrow it unchanged.
 */

/** The two connection settings an infrastructure error names (src/config.ts holds them). */
export interface ConnectionSettings {
  readonly DATABASE_URL: string;
  readonly REDIS_URL: string;
}

export type InfrastructureService = 'postgres' | 'redis';

/** A dependency is unreachable or refuses us; retrying later (or fixing the setting) helps. */
export class InfrastructureError extends TrainsyncError {
  readonly service: InfrastructureService;
  /**
   * The setting names something that is not this service at all (REDIS_URL at an HTTP
   * port): waiting cannot help, the configuration is wrong (exit 2, not 1).
   */
  readonly misconfigured: boolean;
  constructor(service: InfrastructureService, message: string, options?: { cause?: unknown; misconfigured?: boolean }) {
    const misconfigured = options?.misconfigured === true;
    super(message, { code: misconfigured ? `${service.toUpperCase()}_MISCONFIGURED` : `${service.toUpperCase()}_UNAVAILABLE`, retryable: !misconfigured, cause: options?.cause });
    this.name = 'InfrastructureError';
    this.service = service;
    this.misconfigured = misconfigured;
  }
}

/** The URL with its password (in the userinfo or a `?password=` parameter) replaced by `***`. */
export function maskUrl(url: string): string {
  // Sentinel and Cluster URLs list several hosts (h1:26379,h2:26379), which WHATWG URL
  // refuses: mask with one stand-in host, then put the list back.
  const multi = /^([a-z][a-z0-9+.-]*:\/\/)((?:[^@/?#]*@)?)([^@/?#]*,[^@/?#]*)(.*)$/is.exec(url);
  if (multi && !multi[4]!.includes('@')) return maskOneHost(`${multi[1]}${multi[2]}${MULTI_HOST}${multi[4]}`).replace(MULTI_HOST, multi[3]!);
  return maskOneHost(url);
}

function maskOneHost(url: string): string {
  const parsed = parseUrl(url);
  // An '@' after the authority means an unencoded '/', '?' or '#' in the password cut
  // the authority short (postgres://u:12/x@db parses as port 12): the rest would leak.
  if (!parsed || /@/.test(parsed.url.pathname + parsed.url.search + parsed.url.hash)) {
    // Cannot tell where the password ends, so show nothing past the scheme.
    const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? '';
    return `${scheme}(unparsable URL${url.includes('@') ? '; percent-encode special characters in the password' : ''})`;
  }
  if (parsed.url.password) parsed.url.password = '***';
  // pg reads any query parameter as a connection setting, `password` and `sslpassword` included.
  for (const key of [...parsed.url.searchParams.keys()]) {
    if (/password/i.test(key)) parsed.url.searchParams.set(key, '***');
  }
  const text = parsed.url.toString();
  return parsed.dummyHost ? text.replace(`@${DUMMY_HOST}/`, '@/') : text;
}

const DUMMY_HOST = 'dummy-host.invalid';
const MULTI_HOST = 'multi-host.invalid';

/** pg accepts `postgres://user:pw@/db?host=/socket` (no host), which WHATWG URL rejects: parse it the way pg does. */
function parseUrl(url: string): { url: URL; dummyHost: boolean } | undefined {
  try {
    return { url: new URL(url), dummyHost: false };
  } catch {
    try {
      return url.includes('@/') ? { url: new URL(url.replace('@/', `@${DUMMY_HOST}/`)), dummyHost: true } : undefined;
    } catch {
      return undefined;
    }
  }
}

/** A one-line explanation of a Postgres connection/login failure, or undefined for any other error. */
export function describeDatabaseError(error: unknown, databaseUrl: string): string | undefined {
  const parts = errorParts(error);
  const withCode = (code: string) => parts.find((p) => p.code === code);
  let reason: string | undefined;
  const login = withCode('28P01') ?? withCode('28000');
  const missingDb = withCode('3D000');
  const restarting = withCode('57P01') ?? withCode('57P02') ?? withCode('57P03');
  const full = withCode('53300');
  if (login?.code === '28P01') reason = `${login.message}; check the user and password in DATABASE_URL`;
  else if (login && /^role .* does not exist/.test(login.message)) reason = `${login.message}; check the user name in DATABASE_URL, or run \`trainsync migrate\` (it creates trainsync's own login when TRAINSYNC_OWNER_DATABASE_URL's owner may create roles)`;
  // 28000 without a missing role is pg_hba.conf refusing this user/host/database.
  else if (login) reason = `${login.message}; check the user and database in DATABASE_URL, or the server's pg_hba.conf`;
  else if (missingDb) reason = `${missingDb.message}; create it (createdb) or fix the database name in DATABASE_URL`;
  else if (restarting) reason = `${restarting.message}; the server is shutting down or starting up, try again shortly`;
  else if (full) reason = `${full.message}; each process opens TRAINSYNC_PG_POOL_SIZE + 1 connections: lower it, run fewer processes, or raise max_connections on the server`;
  else reason = networkReason(parts, 'DATABASE_URL');
  // Other SQLSTATE connection/auth/operator classes, and pg's code-less messages for
  // dropped sockets and pool waits (which may also mean "pool exhausted", so no claim of a timeout).
  const pgGeneric = parts.find(
    (p) => /^(08|28|57P)/.test(p.code) || /^Connection terminated|does not support SSL|timeout exceeded when trying to connect/i.test(p.message),
  );
  reason ??= pgGeneric && `${pgGeneric.message || pgGeneric.code}; is the server up, and is DATABASE_URL right?`;
  return reason && scrub(`cannot connect to Postgres at ${maskUrl(databaseUrl)} (DATABASE_URL): ${reason}`, databaseUrl);
}

/** A one-line explanation of a Redis connection/login failure, or undefined for any other error. */
export function describeRedisError(error: unknown, redisUrl: string): string | undefined {
  const foreign = describeNotRedis(error, redisUrl);
  if (foreign !== undefined) return foreign;
  const parts = errorParts(error);
  const auth = parts.find((p) => /^(NOAUTH|WRONGPASS|ERR invalid password)/.test(p.message));
  let reason: string | undefined;
  if (auth?.message.startsWith('NOAUTH')) reason = 'the server needs a password (NOAUTH); put it in REDIS_URL as redis://:PASSWORD@host:port';
  else if (auth) reason = `${auth.message}; check the user name and password in REDIS_URL`;
  else reason = networkReason(parts, 'REDIS_URL');
  // Sentinel and Cluster: ioredis says so in words (a Cluster keeps the last node's error in lastNodeError, read above).
  const sentinels = parts.find((p) => /^All sentinels are unreachable/.test(p.message));
  const cluster = parts.find((p) => /^(Failed to refresh slots cache|None of startup nodes is available)/.test(p.message));
  if (sentinels) reason = `no sentinel answered${reason ? ` (${reason.split(';')[0]})` : ''}; are the sentinels up, and are their host:port list and the master's name in REDIS_URL right?`;
  else if (cluster) reason ??= 'no node of the Cluster answered; are the nodes up, and is the seed list in REDIS_URL right?';
  // ioredis reports a dead or given-up connection by message or error name, not by code.
  const lost = parts.find(
    (p) => p.name === 'MaxRetriesPerRequestError' || /^Connection is closed|Stream isn't writeable/.test(p.message),
  );
  reason ??= lost && `lost the connection (${lost.message}); is the server up, and is REDIS_URL right?`;
  return reason && scrub(`cannot connect to Redis at ${maskUrl(redisUrl)} (REDIS_URL): ${reason}`, redisUrl);
}

/**
 * Something answered at REDIS_URL, but not in Redis's protocol (ioredis's parser met a
 * reply type byte no Redis sends): an HTTP server, an SSH or mail server. One line
 * naming host:port and what it sent, or undefined when `error` is no such thing.
 */
export function describeNotRedis(error: unknown, redisUrl: string): string | undefined {
  const reply = foreignReply(error);
  if (reply === undefined) return undefined;
  const sent = reply.bytes.length === 0 ? '' : ` (it sent "${excerpt(reply.bytes)}")`;
  return scrub(`REDIS_URL: ${redisWhere(redisUrl)} answered, but not as Redis${sent}; point REDIS_URL at a Redis server, e.g. redis://127.0.0.1:6379`, redisUrl);
}

/** True when `error` (or what it wraps) is ioredis's parser refusing a reply: the server is not Redis. */
export function isNotRedis(error: unknown): boolean {
  return foreignReply(error) !== undefined;
}

/**
 * redis-parser's ParserError ("Protocol error, got "H" as reply type byte"), with the
 * bytes it held: a Buffer, or (as redis-parser stores it) that Buffer JSON-encoded.
 */
function foreignReply(error: unknown, depth = 0): { bytes: Uint8Array } | undefined {
  if (typeof error !== 'object' || error === null || depth > 4) return undefined;
  const e = error as Record<string, unknown>;
  if (e.name === 'ParserError' || (typeof e.message === 'string' && /^Protocol error, got /.test(e.message))) return { bytes: parserBytes(e.buffer) };
  for (const inner of [...(Array.isArray(e.errors) ? e.errors : []), e.cause, e.lastNodeError]) {
    const found = foreignReply(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}

function parserBytes(buffer: unknown): Uint8Array {
  if (buffer instanceof Uint8Array) return buffer;
  if (typeof buffer !== 'string') return new Uint8Array();
  try {
    const parsed = JSON.parse(buffer) as { data?: unknown };
    return Array.isArray(parsed.data) && parsed.data.every((b) => typeof b === 'number') ? Uint8Array.from(parsed.data as number[]) : new Uint8Array();
  } catch {
    return new Uint8Array();
  }
}

/** The first line of what the server sent, printable ASCII only (others as \xNN), at most 40 characters. */
function excerpt(bytes: Uint8Array): string {
  const MAX = 40;
  let out = '';
  let index = 0;
  for (; index < bytes.length && out.length < MAX; index += 1) {
    const byte = bytes[index]!;
    if (byte === 0x0d || byte === 0x0a) break;
    out += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  // "…" when more than the line's end follows.
  return bytes.subarray(index).some((byte) => byte !== 0x0d && byte !== 0x0a) ? `${out}…` : out;
}

/** host:port of a single-server REDIS_URL; the (masked) URL itself for Sentinel and Cluster, whose node answered is not known. */
function redisWhere(redisUrl: string): string {
  if (!/^rediss?:\/\//i.test(redisUrl)) return maskUrl(redisUrl);
  const parsed = parseUrl(redisUrl)?.url;
  return parsed ? `${parsed.hostname}:${parsed.port || '6379'}` : maskUrl(redisUrl);
}

/**
 * The InfrastructureError for `error` (cause kept), or undefined when it is not a
 * connection/login problem. Without `service`, it is inferred from the error itself:
 * pg and ioredis errors look different, and socket errors carry the port they tried.
 */
export function toInfrastructureError(
  error: unknown,
  config: ConnectionSettings,
  service: InfrastructureService | undefined = serviceOf(error, config),
): InfrastructureError | undefined {
  if (error instanceof InfrastructureError) return error;
  const message =
    service === 'postgres' ? describeDatabaseError(error, config.DATABASE_URL)
    : service === 'redis' ? describeRedisError(error, config.REDIS_URL)
    : undefined;
  if (message === undefined || service === undefined) return undefined;
  return new InfrastructureError(service, message, { cause: error, misconfigured: service === 'redis' && isNotRedis(error) });
}

interface ErrorPart {
  code: string;
  message: string;
  name: string;
  port: number | undefined;
  hostname: string | undefined;
}

/**
 * The error and everything it wraps: node's happy-eyeballs connect throws an
 * AggregateError (empty message) with one error per address in `.errors`, and
 * wrappers keep the original in `.cause`.
 */
function errorParts(error: unknown, depth = 0): ErrorPart[] {
  if (typeof error !== 'object' || error === null || depth > 4) return [];
  const e = error as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  const own: ErrorPart = {
    code: text(e.code),
    message: text(e.message),
    name: text(e.name),
    port: typeof e.port === 'number' ? e.port : undefined,
    hostname: typeof e.hostname === 'string' ? e.hostname : undefined,
  };
  const inner = [...(Array.isArray(e.errors) ? e.errors : []), e.cause, e.lastNodeError];
  return [own, ...inner.flatMap((x) => errorParts(x, depth + 1))];
}

/** How to start a service that refuses connections: the compose file's, or the system's own. */
const START_HINT: Readonly<Record<string, string>> = {
  DATABASE_URL: 'Start it: `docker compose up -d postgres redis`, or the system service (`sudo systemctl start postgresql`).',
  REDIS_URL: 'Start it: `docker compose up -d postgres redis`, or the system service (`sudo systemctl start redis-server`).',
};

/** Socket-level failures read the same for both services; only the setting differs. */
function networkReason(parts: ErrorPart[], setting: string): string | undefined {
  const codes = new Set(parts.map((p) => p.code));
  const hostAndPort = `is the server running, and are the host and port in ${setting} right`;
  if (codes.has('ECONNREFUSED')) return `connection refused; ${hostAndPort}? ${START_HINT[setting] ?? ''}`.trimEnd();
  if (codes.has('ENOTFOUND') || codes.has('EAI_AGAIN')) return `host name not found; check the host in ${setting}`;
  if (codes.has('ETIMEDOUT') || parts.some((p) => /connection timeout|^timeout expired/i.test(p.message))) {
    return `no answer (timed out); ${hostAndPort}, and does the network let the connection through?`;
  }
  if (codes.has('EHOSTUNREACH') || codes.has('ENETUNREACH')) return `host unreachable; ${hostAndPort}?`;
  const dropped = parts.find((p) => ['ECONNRESET', 'EPIPE', 'ECONNABORTED'].includes(p.code) || /CERT|^ERR_(TLS|SSL)/.test(p.code));
  return dropped && `${dropped.message || dropped.code}; is the server up, and is ${setting} right (including TLS)?`;
}

function serviceOf(error: unknown, config: ConnectionSettings): InfrastructureService | undefined {
  const parts = errorParts(error);
  // pg's DatabaseError carries a `severity`; these messages are pg's own.
  if (parts.some((p) => /^Connection terminated|does not support SSL/.test(p.message)) || hasSeverity(error)) return 'postgres';
  if (
    parts.some(
      (p) =>
        /^(ReplyError|ParserError|MaxRetriesPerRequestError|ClusterAllFailedError)$/.test(p.name) ||
        /^(Connection is closed|NOAUTH|WRONGPASS|All sentinels are unreachable|Failed to refresh slots cache|None of startup nodes)/.test(p.message),
    )
  ) {
    return 'redis';
  }
  const db = endpointOf(config.DATABASE_URL, 5432);
  const redis = endpointOf(config.REDIS_URL, 6379);
  for (const p of parts) {
    if (p.port !== undefined && p.port === db?.port) return 'postgres';
    if (p.port !== undefined && p.port === redis?.port) return 'redis';
    if (p.hostname !== undefined && p.hostname === db?.host) return 'postgres';
    if (p.hostname !== undefined && p.hostname === redis?.host) return 'redis';
  }
  return undefined;
}

function hasSeverity(error: unknown): boolean {
  return typeof error === 'object' && error !== null && typeof (error as { severity?: unknown }).severity === 'string';
}

function endpointOf(url: string, defaultPort: number): { host: string; port: number } | undefined {
  const parsed = parseUrl(url)?.url;
  return parsed && { host: parsed.hostname, port: Number(parsed.port || defaultPort) };
}

/**
 * Last line of defence: the texts above come from servers and sockets, none of which
 * should echo a password, but a leaked one cannot be taken back.
 */
function scrub(text: string, url: string): string {
  const raw = /^[a-z][a-z0-9+.-]*:\/\/[^@]*?:(.*)@/i.exec(url)?.[1];
  const candidates = new Set([raw, parseUrl(url)?.url.password, safeDecode(parseUrl(url)?.url.password)]);
  let out = text;
  for (const secret of candidates) if (secret && secret.length >= 3) out = out.split(secret).join('***');
  return out;
}

function safeDecode(value: string | undefined): string | undefined {
  try {
    return value && decodeURIComponent(value);
  } catch {
    return undefined;
  }
}
