import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Debian's pgbouncer (`apt-get install pgbouncer`; .ci/run installs it). */
export const PGBOUNCER = process.env.PGBOUNCER_PATH ?? '/usr/sbin/pgbouncer';

export interface OwnPgBouncer {
  /** The port it listens on (127.0.0.1). */
  port: number;
  /** A URL of database `name` through it (user postgres, the owner; or trainsync's own login, `trainsync_worker`). */
  url(name: string, user?: string): string;
  /** Its log so far. */
  log(): string;
  close(): Promise<void>;
}

export interface PgBouncerOptions {
  /** transaction (default) or session. */
  poolMode?: 'transaction' | 'session';
  /** Server connections per database and user. Default 3: few, so clients share them. */
  poolSize?: number;
  /** The Postgres it stands in front of. Default 127.0.0.1:5432. */
  upstream?: { host: string; port: number };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A PgBouncer of this test's own (own port, own ini and userlist in a temp directory,
 * trust auth), in front of the shared Postgres; never the system's service. PgBouncer
 * refuses to run as root: as root it runs as `postgres`.
 */
export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<OwnPgBouncer> {
  if (!existsSync(PGBOUNCER)) throw new Error(`${PGBOUNCER} not found: apt-get install -y pgbouncer (or set PGBOUNCER_PATH)`);
  const upstream = options.upstream ?? { host: '127.0.0.1', port: 5432 };
  const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-pgbouncer-'));
  const port = await freePort();
  const logFile = path.join(dir, 'pgbouncer.log');
  writeFileSync(path.join(dir, 'userlist.txt'), '"postgres" ""\n"trainsync_worker" ""\n');
  writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.host} port=${upstream.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 3}`,
      'max_client_conn = 500',
      `logfile = ${logFile}`,
      '',
    ].join('\n'),
  );
  let ids: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    ids = { uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) };
    chownSync(dir, ids.uid, ids.gid);
  }
  const child: ChildProcess = spawn(PGBOUNCER, [path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'], ...(ids ?? {}) });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const readLog = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const deadline = Date.now() + 20_000;
  while (!readLog().includes('process up')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`pgbouncer did not start: ${output}${readLog()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    url: (name, user = 'postgres') => `postgres://${user}@127.0.0.1:${port}/${name}`,
    log: readLog,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
