/**
 * What REDIS_URL points at: one server, a Sentinel-watched master, or a Cluster.
 *
 *   redis://[[user]:password@]host:6379[/db]                                 one server (ioredis reads it as today)
 *   redis+sentinel://[[user]:password@]s1:26379,s2:26379/mymaster[/db]       a master found through its sentinels
 *   redis+cluster://[[user]:password@]n1:7000,n2:7001,n3:7002                a Cluster, from any seed nodes
 *
 * `rediss` instead of `redis` speaks TLS. The userinfo's password is the data nodes'
 * (AUTH); sentinels that need their own take `?sentinelPassword=` (and `sentinelUsername=`).
 * Pure parsing, no I/O: src/config.ts validates with it, src/lib/redis-client.ts connects with it.
 */

export interface RedisEndpoint {
  host: string;
  port: number;
}

interface Credentials {
  username?: string;
  password?: string;
  tls: boolean;
}

export type RedisTarget =
  | { kind: 'single'; url: string }
  | ({ kind: 'sentinel'; sentinels: RedisEndpoint[]; name: string; db: number; sentinelUsername?: string; sentinelPassword?: string } & Credentials)
  | ({ kind: 'cluster'; nodes: RedisEndpoint[] } & Credentials);

export const SENTINEL_EXAMPLE = 'redis+sentinel://:PASSWORD@sentinel1:26379,sentinel2:26379/mymaster';
export const CLUSTER_EXAMPLE = 'redis+cluster://:PASSWORD@node1:7000,node2:7001,node3:7002';
const SINGLE_EXAMPLE = 'redis://127.0.0.1:6379';

const MULTI = /^(rediss?)\+(sentinel|cluster):\/\/(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(\?[^#]*)?$/i;

/** The target, or what is wrong with the URL in words (with an example), never echoing a password. */
export function parseRedisUrl(url: string): RedisTarget | string {
  if (/^rediss?:\/\//i.test(url)) return { kind: 'single', url };
  const match = MULTI.exec(url);
  if (!match) {
    return /^rediss?\+/i.test(url)
      ? `redis+sentinel://HOSTS/MASTER or redis+cluster://HOSTS, e.g. ${SENTINEL_EXAMPLE} or ${CLUSTER_EXAMPLE}`
      : `a Redis URL, e.g. ${SINGLE_EXAMPLE}, ${SENTINEL_EXAMPLE} or ${CLUSTER_EXAMPLE}`;
  }
  const [, scheme = 'redis', mode = '', userinfo, hostList = '', path = '', query = ''] = match;
  const kind = mode.toLowerCase() as 'sentinel' | 'cluster';
  const example = kind === 'sentinel' ? SENTINEL_EXAMPLE : CLUSTER_EXAMPLE;
  const credentials = parseUserinfo(userinfo);
  if (typeof credentials === 'string') return `${credentials}, e.g. ${example}`;
  const defaultPort = kind === 'sentinel' ? 26379 : 6379;
  const endpoints: RedisEndpoint[] = [];
  for (const part of hostList.split(',')) {
    const endpoint = parseEndpoint(part.trim(), defaultPort);
    if (typeof endpoint === 'string') return `${kind === 'sentinel' ? 'sentinels' : 'seed nodes'} as host:port separated by commas (${endpoint}), e.g. ${example}`;
    endpoints.push(endpoint);
  }
  const params = new URLSearchParams(query);
  const tls = scheme.toLowerCase() === 'rediss';
  const segments = path.split('/').filter((s) => s !== '');
  if (kind === 'cluster') {
    if (segments.length > 0) return `no path after the seed nodes (a Cluster has only database 0), e.g. ${example}`;
    return { kind, nodes: endpoints, tls, ...credentials };
  }
  const [name, dbText, ...rest] = segments.map(decodeURIComponent);
  if (name === undefined) return `the master's name after the sentinels (as in sentinel.conf's "sentinel monitor NAME …"), e.g. ${example}`;
  if (rest.length > 0 || (dbText !== undefined && !/^\d{1,2}$/.test(dbText))) return `/MASTER or /MASTER/DB (a database number) after the sentinels, e.g. ${example}/0`;
  const sentinelUsername = params.get('sentinelUsername') ?? undefined;
  const sentinelPassword = params.get('sentinelPassword') ?? undefined;
  return {
    kind,
    sentinels: endpoints,
    name,
    db: dbText === undefined ? 0 : Number(dbText),
    tls,
    ...credentials,
    ...(sentinelUsername ? { sentinelUsername } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
  };
}

/** The target of a URL src/config.ts has already accepted. */
export function redisTarget(url: string): RedisTarget {
  const target = parseRedisUrl(url);
  if (typeof target === 'string') throw new Error(`REDIS_URL: ${target}`);
  return target;
}

export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:\/\//i.test(url);
}

/**
 * The key prefix as a Cluster needs it: inside a hash tag, so every key of every queue
 * (and our own keys built on it: locks, the request budget's log and pause) hashes to one
 * slot, as BullMQ's multi-key scripts and FlowProducer (parent and child in different
 * queues) require. A prefix that already holds a hash tag is kept as it is; on a single
 * server or behind Sentinel nothing changes, so existing deployments keep their keys.
 */
export function clusterSafePrefix(prefix: string, url: string): string {
  if (!isClusterUrl(url) || hasHashTag(prefix)) return prefix;
  return `{${prefix}}`;
}

/** Redis's own rule: the first "{", then a "}" after it with at least one character between. */
export function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  if (open < 0) return false;
  const close = key.indexOf('}', open + 1);
  return close > open + 1;
}

function parseUserinfo(userinfo: string | undefined): { username?: string; password?: string } | string {
  if (userinfo === undefined || userinfo === '') return {};
  const colon = userinfo.indexOf(':');
  try {
    const username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
    const password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1));
    return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
  } catch {
    return 'a user name and password percent-encoded where they hold special characters';
  }
}

function parseEndpoint(text: string, defaultPort: number): RedisEndpoint | string {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(text);
  if (!match) return text === '' ? 'an empty host' : `"${text}" is not host:port`;
  const host = match[1]!.replace(/^\[|\]$/g, '');
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  if (port < 1 || port > 65_535) return `port ${port} is out of range`;
  return { host, port };
}
