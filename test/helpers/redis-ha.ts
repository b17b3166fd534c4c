/**
 * A Redis Cluster, or a master + replica + sentinel, of a test's own: redis-server
 * children on free loopback ports, their files in one temp dir, every one killed (and
 * the dir removed) by destroy(). The shared Redis on 6379 is never touched.
 *
 * Startup waits for what the tests rely on, not for a fixed time: every Cluster node
 * reports cluster_state:ok with all 16384 slots, every replica's link to its master is
 * up; the sentinel names the master and knows its replica in sync.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './own-services.ts';

const execFileAsync = promisify(execFile);
const START_TIMEOUT_MS = 30_000;
const setprivPath = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/** Polls `check` until it returns a value other than undefined. */
async function until<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = START_TIMEOUT_MS, exitedIsFatal = false): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (exitedIsFatal && error instanceof Error && / exited:/.test(error.message)) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (${String(lastError)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One command on a fresh connection that never retries (the server may be starting or gone). */
export async function command(port: number, args: string[]): Promise<unknown> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const [name, ...rest] = args;
    return await client.call(name!, ...rest);
  } finally {
    client.disconnect();
  }
}

function parseInfo(text: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of String(text).split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

/** The name dropStaleOwnClusters() (own-services.ts) recognises, so a killed run's dir is swept later. */
function ownDirName(kind: string): string {
  return `tsown_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}-${kind}-`;
}

class Servers {
  readonly children: ChildProcess[] = [];
  readonly output = new Map<number, string>();
  private readonly byPort = new Map<number, ChildProcess>();
  private readonly onExit = (): void => {
    for (const child of this.children) child.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  };
  constructor(readonly dir: string) {
    process.on('exit', this.onExit);
  }

  spawn(port: number, args: string[]): void {
    const redisArgs = [...args];
    const child =
      setprivPath === undefined
        ? spawn('redis-server', redisArgs, { stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn(setprivPath, ['--pdeathsig', 'KILL', '--', 'redis-server', ...redisArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer): void => {
      this.output.set(port, ((this.output.get(port) ?? '') + chunk.toString()).slice(-4_000));
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.children.push(child);
    this.byPort.set(port, child);
  }

  async waitForPing(port: number): Promise<void> {
    const child = this.byPort.get(port);
    await until(async () => {
      // Exited (e.g. the port was taken meanwhile): fail now, not after the timeout.
      if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`redis-server on ${port} exited:\n${this.output.get(port) ?? ''}`);
      return (await command(port, ['PING'])) === 'PONG' ? true : undefined;
    }, `redis-server on ${port} to answer`, START_TIMEOUT_MS, true);
  }

  async destroy(): Promise<void> {
    process.off('exit', this.onExit);
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    await rm(this.dir, { recursive: true, force: true });
  }
}

function baseArgs(port: number, dir: string): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'no', '--save', '', '--appendonly', 'no', '--dir', dir];
}

export interface OwnCluster {
  /** Every node's port: masters first, then replicas (as created). */
  ports: number[];
  /** `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3` (the masters as seeds). */
  url: string;
  /** The port of the master serving `key`'s slot now, and of its replica. */
  ownersOf(key: string): Promise<{ slot: number; master: number; replica: number }>;
  /** CLUSTER FAILOVER on the replica of `key`'s master; resolves once the replica is master and every node agrees. */
  failover(key: string): Promise<{ from: number; to: number }>;
  destroy(): Promise<void>;
}

/**
 * Once more on a failure: a port found free may be taken by another process before
 * redis-server binds it (freePort's small race), which a second set of ports avoids.
 */
async function twice<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch {
    return start();
  }
}

/** Three masters with one replica each (cluster-node-timeout 5 s), on free ports. */
export function startOwnCluster(): Promise<OwnCluster> {
  return twice(startClusterOnce);
}

/** A master, its replica and one sentinel (quorum 1), on free ports. */
export function startOwnSentinel(): Promise<OwnSentinel> {
  return twice(startSentinelOnce);
}

async function startClusterOnce(): Promise<OwnCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), ownDirName('rediscluster')));
  const servers = new Servers(dir);
  try {
    const ports: number[] = [];
    while (ports.length < 6) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    for (const port of ports) {
      servers.spawn(port, [
        ...baseArgs(port, dir),
        '--cluster-enabled', 'yes',
        '--cluster-config-file', `nodes-${port}.conf`,
        '--cluster-node-timeout', '5000',
        // A replica with a stale link may still take over when asked (CLUSTER FAILOVER waits for it anyway).
        '--cluster-replica-validity-factor', '0',
      ]);
    }
    await Promise.all(ports.map((port) => servers.waitForPing(port)));
    await execFileAsync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: START_TIMEOUT_MS });
    await waitForClusterOk(ports);

    const ownersOf = async (key: string): Promise<{ slot: number; master: number; replica: number }> => {
      const slot = Number(await command(ports[0]!, ['CLUSTER', 'KEYSLOT', key]));
      const nodes = parseNodes(String(await command(ports[0]!, ['CLUSTER', 'NODES'])));
      const master = nodes.find((n) => n.flags.includes('master') && !n.flags.includes('fail') && n.slots.some(([a, b]) => slot >= a && slot <= b));
      const replica = master && nodes.find((n) => n.masterId === master.id && !n.flags.includes('fail'));
      if (!master || !replica) throw new Error(`no master and replica for slot ${slot}:\n${nodes.map((n) => `${n.port} ${n.flags.join(',')}`).join('\n')}`);
      return { slot, master: master.port, replica: replica.port };
    };

    return {
      ports,
      url: `redis+cluster://${ports.slice(0, 3).map((p) => `127.0.0.1:${p}`).join(',')}`,
      ownersOf,
      async failover(key) {
        const { master, replica } = await ownersOf(key);
        // The replica must be in sync, or CLUSTER FAILOVER (without FORCE) would wait for it.
        await until(async () => (parseInfo(await command(replica, ['INFO', 'replication'])).master_link_status === 'up' ? true : undefined), `replica ${replica} in sync`);
        await command(replica, ['CLUSTER', 'FAILOVER']);
        await until(async () => (parseInfo(await command(replica, ['INFO', 'replication'])).role === 'master' ? true : undefined), `replica ${replica} to become master`);
        await until(async () => {
          const views = await Promise.all(ports.map(async (port) => parseNodes(String(await command(port, ['CLUSTER', 'NODES'])))));
          return views.every((nodes) => nodes.find((n) => n.port === replica)?.flags.includes('master') && nodes.find((n) => n.port === master)?.flags.includes('slave')) ? true : undefined;
        }, 'every node to see the failover');
        await waitForClusterOk(ports);
        return { from: master, to: replica };
      },
      destroy: () => servers.destroy(),
    };
  } catch (error) {
    await servers.destroy();
    throw error;
  }
}

interface ClusterNode {
  id: string;
  port: number;
  flags: string[];
  masterId: string;
  slots: Array<[number, number]>;
}

function parseNodes(text: string): ClusterNode[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', address = '', flags = '', masterId = '', , , , , ...slots] = line.trim().split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        flags: flags.split(','),
        masterId,
        slots: slots.filter((s) => !s.startsWith('[')).map((s) => {
          const [a, b] = s.split('-').map(Number);
          return [a!, b ?? a!] as [number, number];
        }),
      };
    });
}

async function waitForClusterOk(ports: number[]): Promise<void> {
  await until(async () => {
    for (const port of ports) {
      const info = parseInfo(await command(port, ['CLUSTER', 'INFO']));
      if (info.cluster_state !== 'ok' || info.cluster_slots_ok !== '16384' || info.cluster_known_nodes !== String(ports.length)) return undefined;
      const replication = parseInfo(await command(port, ['INFO', 'replication']));
      if (replication.role === 'slave' && replication.master_link_status !== 'up') return undefined;
    }
    return true;
  }, 'cluster_state:ok on every node, every replica linked');
}

export interface OwnSentinel {
  masterPort: number;
  replicaPort: number;
  sentinelPort: number;
  /** `redis+sentinel://127.0.0.1:S/mymaster` */
  url: string;
  /** The port the sentinel names as the master now. */
  currentMaster(): Promise<number>;
  /** SENTINEL FAILOVER; resolves once the sentinel names the other server and it is a master in sync-able state. */
  failover(): Promise<{ from: number; to: number }>;
  destroy(): Promise<void>;
}

export const SENTINEL_MASTER_NAME = 'mymaster';

async function startSentinelOnce(): Promise<OwnSentinel> {
  const dir = await mkdtemp(path.join(os.tmpdir(), ownDirName('redissentinel')));
  const servers = new Servers(dir);
  try {
    const [masterPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()] as [number, number, number];
    servers.spawn(masterPort, baseArgs(masterPort, dir));
    servers.spawn(replicaPort, [...baseArgs(replicaPort, dir), '--replicaof', '127.0.0.1', String(masterPort)]);
    await Promise.all([servers.waitForPing(masterPort), servers.waitForPing(replicaPort)]);
    await until(async () => (parseInfo(await command(replicaPort, ['INFO', 'replication'])).master_link_status === 'up' ? true : undefined), 'the replica to sync');
    // The sentinel rewrites its own file: it lives in the temp dir.
    const conf = path.join(dir, 'sentinel.conf');
    await writeFile(
      conf,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        'daemonize no',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${masterPort} 1`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 5000`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 10000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    servers.spawn(sentinelPort, [conf, '--sentinel']);
    await servers.waitForPing(sentinelPort);

    const currentMaster = async (): Promise<number> => {
      const address = (await command(sentinelPort, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME])) as [string, string] | null;
      return Number(address?.[1]);
    };
    /** The sentinel knows a replica of the current master whose link is up: SENTINEL FAILOVER can pick it. */
    const replicaKnown = async (): Promise<true | undefined> => {
      const replicas = (await command(sentinelPort, ['SENTINEL', 'REPLICAS', SENTINEL_MASTER_NAME])) as string[][];
      return replicas.some((fields) => {
        const record = Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : [])));
        return record.flags === 'slave' && record['master-link-status'] === 'ok';
      })
        ? true
        : undefined;
    };
    await until(async () => ((await currentMaster()) === masterPort ? true : undefined), 'the sentinel to name the master');
    await until(replicaKnown, 'the sentinel to know the replica');

    return {
      masterPort,
      replicaPort,
      sentinelPort,
      url: `redis+sentinel://127.0.0.1:${sentinelPort}/${SENTINEL_MASTER_NAME}`,
      currentMaster,
      async failover() {
        const from = await currentMaster();
        const to = from === masterPort ? replicaPort : masterPort;
        await until(replicaKnown, 'the sentinel to know a replica in sync');
        await command(sentinelPort, ['SENTINEL', 'FAILOVER', SENTINEL_MASTER_NAME]);
        await until(async () => ((await currentMaster()) === to ? true : undefined), 'the sentinel to name the new master');
        await until(async () => (parseInfo(await command(to, ['INFO', 'replication'])).role === 'master' ? true : undefined), `${to} to be master`);
        return { from, to };
      },
      destroy: () => servers.destroy(),
    };
  } catch (error) {
    await servers.destroy();
    throw error;
  }
}
