/**
 * Private Postgres and Redis servers for tests that must stop, crash or restart them.
 *
 * ```ts
 * const pg = await startOwnPostgres();    // throw-away cluster on a free port, trust auth
 * const redis = await startOwnRedis();    // redis-server child process, no persistence
 * await pg.restart(); await redis.stop(); await redis.start();
 * await pg.destroy(); await redis.destroy();   // in afterAll; safe to call twice
 * ```
 *
 * The shared servers (Postgres on 5432, Redis on 6379) are never touched: everything
 * here only stops what it created itself, found by name (`tsown_<epoch>_<hex>`) or by
 * the child process handle it holds.
 *
 * Postgres: created with `pg_createcluster` when it is available and we are root (so
 * `pg_lsclusters` shows it and `pg_dropcluster` removes every trace), otherwise with
 * `initdb` in a temporary directory. Either way it is started and stopped with
 * `pg_ctl -w` directly: `pg_ctlcluster start` sleeps about two seconds after the server
 * is up (it probes with psql three times, 0.5 s apart), `pg_ctl -w` returns in ~0.1 s.
 *
 * Cleanup is layered: destroy(); a process 'exit' hook for a run that ends without
 * calling it; and `dropStaleOwnClusters()` (called by startOwnPostgres) for a run that
 * was killed outright. Redis children also get `setpriv --pdeathsig KILL`, so the
 * kernel kills them when this process dies, however it dies.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { appendFile, chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const execFileAsync = promisify(execFile);

/** Every cluster or temp dir we create is named `tsown_<epoch seconds>_<hex>`. */
const NAME_PREFIX = 'tsown_';
const NAME_PATTERN = /^tsown_(\d+)_[0-9a-f]+$/;
/** Older than this, an own cluster belongs to a crashed run (no test keeps one an hour). */
const STALE_SECONDS = 3_600;
const PG_START_TIMEOUT_MS = 30_000;

export interface OwnPostgres {
  port: number;
  /** `postgres://postgres@127.0.0.1:PORT/DB` (trust auth, no password); DB defaults to `postgres`. */
  url(database?: string): string;
  /** Stops the server: 'fast' (default) ends sessions cleanly, 'immediate' is a crash (recovery on next start). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port with the same data; resolves once it accepts connections. */
  start(): Promise<void>;
  /** stop('fast') then start(): every open connection is terminated. */
  restart(): Promise<void>;
  /** Stops the server and deletes the cluster; safe to call twice. */
  destroy(): Promise<void>;
}

export interface OwnRedis {
  port: number;
  /** `redis://127.0.0.1:PORT` */
  url: string;
  /** Ends the redis-server child and waits for it to exit (no-op when already stopped). */
  stop(): Promise<void>;
  /** Starts a fresh, empty server on the same port (nothing is persisted). */
  start(): Promise<void>;
  /** stop(), and forget the server; safe to call twice. */
  destroy(): Promise<void>;
}

/** A port that was free a moment ago (the OS picks it; a tiny race with other processes remains). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('could not read the listening port'))));
    });
  });
}

// ---------------------------------------------------------------------------
// Exit hook: synchronous best-effort cleanup of whatever is still alive.
// ---------------------------------------------------------------------------

/** Synchronous cleanups of live servers, keyed by an object the server owns. */
const liveCleanups = new Map<object, () => void>();
let exitHookInstalled = false;

function registerCleanup(owner: object, cleanup: () => void): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // 'exit' handlers must be synchronous, hence spawnSync / kill below.
    process.on('exit', () => {
      for (const run of liveCleanups.values()) {
        try {
          run();
        } catch {
          // best effort: the next run's dropStaleOwnClusters() catches what is left
        }
      }
    });
  }
  liveCleanups.set(owner, cleanup);
}

function newName(): string {
  return `${NAME_PREFIX}${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
}

function isStale(name: string, nowSeconds: number): boolean {
  const match = NAME_PATTERN.exec(name);
  return match !== null && nowSeconds - Number(match[1]) > STALE_SECONDS;
}

async function run(command: string, args: string[], timeoutMs = PG_START_TIMEOUT_MS): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, { timeout: timeoutMs, encoding: 'utf8' });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed: ${e.stderr?.trim() || e.message}`);
  }
}

// ---------------------------------------------------------------------------
// Postgres
// ---------------------------------------------------------------------------

const isRoot = process.getuid?.() === 0;

/** The newest installed server version, from the Debian layout /usr/lib/postgresql/<v>/bin. */
function debianVersion(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  return readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(path.join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a))[0];
}

/** pg_createcluster needs root (it writes /etc/postgresql and /var/lib/postgresql). */
function useCreateCluster(): boolean {
  return isRoot && debianVersion() !== undefined && existsSync('/usr/bin/pg_createcluster');
}

/** Postgres refuses to run as root, so as root its tools run as the `postgres` user. */
function asPostgres(command: string, args: string[]): [string, string[]] {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

/** A binary of the server: the Debian bindir if there is one, else whatever is on PATH. */
function pgBinary(name: string): string {
  const version = debianVersion();
  return version === undefined ? name : `/usr/lib/postgresql/${version}/bin/${name}`;
}

/** Where a created cluster lives and how to start it with pg_ctl; differs per way of creating it. */
interface ClusterLayout {
  dataDir: string;
  logFile: string;
  /** Extra `postgres` options (pg_ctl -o), e.g. where the config file is. */
  serverOptions: string;
  /** Removes the cluster (stopping it first); asynchronous and synchronous flavours. */
  drop(): Promise<void>;
  dropSync(): void;
}

/** `pg_createcluster`: registered with postgresql-common, so pg_lsclusters lists it. */
async function createDebianCluster(name: string, port: number): Promise<ClusterLayout> {
  const version = debianVersion() as string;
  await run('pg_createcluster', [
    version, name, '--port', String(port),
    // manual: a leftover cluster must never come back on its own at boot.
    '--start-conf', 'manual',
    // Speed over durability: these data are thrown away.
    '-o', 'fsync=off', '-o', 'synchronous_commit=off', '-o', 'full_page_writes=off',
    // Trust for every local and TCP connection (the default would be peer/scram).
    '--', '--auth=trust', '--no-sync',
  ]);
  // Data dir and log file can be relocated by createcluster.conf: ask rather than assume
  // (only the config dir is always /etc/postgresql/<version>/<name>).
  const line = (await run('pg_lsclusters', ['-h', version, name])).trim();
  const [, , , , , dataDir, logFile] = line.split(/\s+/);
  if (dataDir === undefined || logFile === undefined) throw new Error(`unexpected pg_lsclusters output: ${line}`);
  return {
    dataDir,
    logFile,
    // listen_addresses goes here, not through pg_createcluster -o, which would write it
    // unquoted (a syntax error for an IP) or, quoted, double-quote it.
    serverOptions: `-c config_file=/etc/postgresql/${version}/${name}/postgresql.conf -c listen_addresses=127.0.0.1`,
    drop: async () => {
      await run('pg_dropcluster', [version, name, '--stop']);
    },
    dropSync: () => {
      spawnSync('pg_dropcluster', [version, name, '--stop'], { stdio: 'ignore', timeout: 15_000 });
    },
  };
}

/** Fallback: `initdb` into a temp dir, all configuration in that dir. */
async function createTempCluster(name: string, port: number): Promise<ClusterLayout> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `${name}-`));
  const dataDir = path.join(dir, 'data');
  if (isRoot) {
    // The server runs as `postgres`: give it the directory (also its socket dir).
    const uid = Number((await run('id', ['-u', 'postgres'])).trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).trim());
    await chown(dir, uid, gid);
  }
  const [cmd, args] = asPostgres(pgBinary('initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  await run(cmd, args);
  await appendFile(dataDir + '/postgresql.conf', [
    '',
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    'fsync = off',
    'synchronous_commit = off',
    'full_page_writes = off',
    '',
  ].join('\n'));
  const stopSync = (): void => {
    const [c, a] = asPostgres(pgBinary('pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-s']);
    spawnSync(c, a, { stdio: 'ignore', timeout: 15_000 });
  };
  return {
    dataDir,
    logFile: path.join(dir, 'postgres.log'),
    serverOptions: '',
    drop: async () => {
      if (existsSync(path.join(dataDir, 'postmaster.pid'))) stopSync();
      await rm(dir, { recursive: true, force: true });
    },
    dropSync: () => {
      if (existsSync(path.join(dataDir, 'postmaster.pid'))) stopSync();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function pgCtl(layout: ClusterLayout, args: string[]): Promise<void> {
  const [cmd, fullArgs] = asPostgres(pgBinary('pg_ctl'), [...args, '-D', layout.dataDir, '-w', '-s']);
  await run(cmd, fullArgs);
}

/** Waits until a TCP connection on 127.0.0.1:port is accepted, like a test's client will make. */
async function waitForPostgres(port: number, logFile: string): Promise<void> {
  const deadline = Date.now() + PG_START_TIMEOUT_MS;
  for (;;) {
    const ready = await run('pg_isready', ['-q', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres'], 5_000).then(() => true, () => false);
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`Postgres on port ${port} did not become ready; see ${logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Drops own clusters (and own temp dirs: initdb fallback, Redis) created more than an hour ago: leftovers
 * of a run that was killed before it could clean up. Younger ones may belong to a run
 * in progress and are kept. Returns the names it dropped.
 */
export async function dropStaleOwnClusters(): Promise<string[]> {
  const now = Date.now() / 1000;
  const dropped: string[] = [];
  if (existsSync('/usr/bin/pg_lsclusters') && isRoot) {
    // Columns: Ver Cluster Port Status Owner Datadir Logfile
    for (const line of (await run('pg_lsclusters', ['-h'])).split('\n')) {
      const [version, name] = line.trim().split(/\s+/);
      if (version === undefined || name === undefined || !isStale(name, now)) continue;
      await run('pg_dropcluster', [version, name, '--stop']).catch(() => undefined);
      dropped.push(name);
    }
  }
  for (const entry of await readdir(os.tmpdir()).catch(() => [] as string[])) {
    const name = entry.split('-')[0] ?? '';
    if (!isStale(name, now)) continue;
    const dir = path.join(os.tmpdir(), entry);
    const dataDir = path.join(dir, 'data');
    if (existsSync(path.join(dataDir, 'postmaster.pid'))) {
      const [cmd, args] = asPostgres(pgBinary('pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-s']);
      await run(cmd, args).catch(() => undefined);
    }
    await rm(dir, { recursive: true, force: true });
    dropped.push(name);
  }
  return dropped;
}

export interface StartOwnPostgresOptions {
  /** How to create the cluster; by default pg_createcluster when usable, else initdb (tests force 'initdb' to cover the fallback). */
  method?: 'pg_createcluster' | 'initdb';
}

/** Creates and starts a private Postgres cluster (user `postgres`, trust auth, 127.0.0.1 only). */
export async function startOwnPostgres(options: StartOwnPostgresOptions = {}): Promise<OwnPostgres> {
  await dropStaleOwnClusters();
  const port = await freePort();
  const name = newName();
  const method = options.method ?? (useCreateCluster() ? 'pg_createcluster' : 'initdb');
  const layout = method === 'pg_createcluster' ? await createDebianCluster(name, port) : await createTempCluster(name, port);
  const handle = {};
  registerCleanup(handle, layout.dropSync);
  let destroyed = false;

  const start = async (): Promise<void> => {
    if (destroyed) throw new Error(`own Postgres ${name} was destroyed`);
    const options = layout.serverOptions === '' ? [] : ['-o', layout.serverOptions];
    await pgCtl(layout, ['start', '-l', layout.logFile, ...options]);
    await waitForPostgres(port, layout.logFile);
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast'): Promise<void> => {
    if (destroyed || !existsSync(path.join(layout.dataDir, 'postmaster.pid'))) return;
    await pgCtl(layout, ['stop', '-m', mode]);
  };

  try {
    await start();
  } catch (error) {
    liveCleanups.delete(handle);
    await layout.drop().catch(() => undefined);
    throw error;
  }

  return {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop,
    start,
    restart: async () => {
      await stop('fast');
      await start();
    },
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      liveCleanups.delete(handle);
      await layout.drop();
    },
  };
}

// ---------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------

const REDIS_START_TIMEOUT_MS = 10_000;
const REDIS_STOP_TIMEOUT_MS = 5_000;

/** setpriv (util-linux) can make the kernel kill the child when we die; use it when present. */
const setprivPath = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

function spawnRedis(port: number, dir: string): ChildProcess {
  // No config file: only these settings, so /etc/redis/redis.conf (daemonize yes, a
  // shared dump file) never applies. Foreground, so we own the process and its exit.
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'no',
    '--save', '', '--appendonly', 'no', '--dir', dir,
  ];
  return setprivPath === undefined
    ? spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(setprivPath, ['--pdeathsig', 'KILL', '--', 'redis-server', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Resolves on the child's exit (at once if it has already exited). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function pingOnce(port: number): Promise<boolean> {
  // No retries, no offline queue: one attempt that fails fast while the server is not up.
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Starts a private redis-server child (127.0.0.1, no persistence) and waits until it answers PING. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  // Its own working dir: --save "" means nothing is written, but never into the cwd.
  // Named like a cluster so dropStaleOwnClusters() also sweeps a crashed run's dir.
  const dir = await mkdtemp(path.join(os.tmpdir(), `${newName()}-redis-`));
  const handle = {};
  let child: ChildProcess | undefined;
  let destroyed = false;

  const start = async (): Promise<void> => {
    if (destroyed) throw new Error('own Redis was destroyed');
    if (child !== undefined) return;
    const proc = spawnRedis(port, dir);
    child = proc;
    // Keep the tail of its output for an error message; reading also keeps the pipe from filling.
    let output = '';
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-4_000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    proc.on('error', (error) => {
      output += `\n${String(error)}`;
    });
    registerCleanup(handle, () => {
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });

    const deadline = Date.now() + REDIS_START_TIMEOUT_MS;
    while (!(await pingOnce(port))) {
      if (proc.exitCode !== null || proc.signalCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        child = undefined;
        liveCleanups.delete(handle);
        throw new Error(`redis-server on port ${port} did not start:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (proc === undefined) return;
    // SIGTERM: with --save "" Redis exits at once without writing anything.
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), REDIS_STOP_TIMEOUT_MS);
    await exited(proc);
    clearTimeout(timer);
    child = undefined;
    liveCleanups.delete(handle);
  };

  await start().catch(async (error: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw error;
  });

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
