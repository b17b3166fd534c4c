import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli, startCli, stderrSaid } from './helpers/cli.ts';
import { freePort } from './helpers/own-services.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { runInTerminal } from './helpers/terminal.ts';
import { logRecords, startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * Wrong settings are named at once, in one line, and the CLI tells the truth about who
 * ran its job: a platform URL where nothing ever answered is the setting's fault (exit 2,
 * one failed run, no retries); a Redis that drops or ignores the connection is named or
 * announced; a worker with other settings does not pass its result off as the command's.
 */


/** A TCP server on loopback: `drop` closes each connection at once, `silent` keeps it open and never answers. */
async function tcpServer(kind: 'drop' | 'silent'): Promise<{ url: (scheme: string) => string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    if (kind === 'drop') socket.destroy();
    else sockets.add(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: (scheme) => `${scheme}://user:s3cret-pw@127.0.0.1:${port}/x`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The lines a person reads (the JSON records are for machines). */
// What the command said to a person: its last line comes as a JSON record off a terminal (stderrSaid).
const humanLines = (text: string): string[] => stderrSaid(text).split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{'));

/** One simulator for the file (a small one: what is synced is not the point), and the databases of both parts, made side by side. */
let sim: RunningSimulator;
let databases: TestDatabase[] = [];
beforeAll(async () => {
  [sim, ...databases] = await Promise.all([startSimulator({ seed: 11, sizes: { users: 20, courses: 6, results: 20, groups: 2 } }), createTestDatabase(), createTestDatabase(), createTestDatabase()]);
});
afterAll(async () => {
  await Promise.all([sim?.close(), ...databases.map((d) => d.drop())]);
});

describe('wrong settings are named once, at once', () => {
  let database: TestDatabase;
  const prefix = testPrefix();
  const env = (more: Record<string, string> = {}): Record<string, string> => cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_METRICS_PORT: '0', ...more });

  beforeAll(() => {
    database = databases[0]!;
  });
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  const runsOf = async (resource: string): Promise<Array<{ status: string; error: string | null }>> =>
    (await database.pool.query<{ status: string; error: string | null }>('select status, error from trainsync.runs where resource = $1 order by id', [resource])).rows;

  it('TRAINSYNC_API_URL at a closed loopback port, or at a host name that does not resolve: exit 2, one line naming it, one failed run, no retry', async () => {
    const cases = [
      { what: 'a closed loopback port', url: `http://127.0.0.1:${await freePort()}`, resource: 'courses' },
      { what: 'a host name that does not resolve', url: 'http://nonexistent.invalid', resource: 'users' },
    ];
    // One after the other: a command with no worker connected runs the jobs of its queue itself.
    for (const { what, url, resource } of cases) {
      const before = (await runsOf(resource)).length;
      const run = await runCli(['sync', resource], env({ TRAINSYNC_API_URL: url }));
      expect(run.code, `${what}: ${run.stderr}`).toBe(2);
      const naming = [...humanLines(run.stdout), ...humanLines(run.stderr)].filter((line) => line.includes('TRAINSYNC_API_URL'));
      expect(naming, `${what}: ${run.stdout}\n${run.stderr}`).toHaveLength(1);
      expect(naming[0]).toMatch(/^trainsync: TRAINSYNC_API_URL was not reached \(.*\); check the scheme, host and port in TRAINSYNC_API_URL/);
      const records = logRecords(run.stderr);
      // One attempt of the job, one HTTP try, no "retrying" record.
      expect(records.filter((r) => r.msg === 'job started'), what).toHaveLength(1);
      expect(records.filter((r) => typeof r.msg === 'string' && r.msg.includes('retrying')), what).toHaveLength(0);
      expect(records.filter((r) => r.msg === 'job finished' && r.retried === false), what).toHaveLength(1);
      const runs = (await runsOf(resource)).slice(before);
      expect(runs.map((r) => r.status), what).toEqual(['failed']);
      expect(runs[0]!.error).toContain('TRAINSYNC_API_URL');
    }
    // Nothing left in the queue to fail again later.
    const status = await runCli(['status', '--json'], env());
    expect(status.stdout).not.toMatch(/"(waiting|delayed)":\s*[1-9]/);
  });

  it('REDIS_URL at a port that accepts and closes: one line naming REDIS_URL and the fix', async () => {
    const server = await tcpServer('drop');
    try {
      const run = await runCli(['sync', 'courses'], env({ REDIS_URL: server.url('redis'), TRAINSYNC_REDIS_TIMEOUT_MS: '60000' }));
      expect(run.code, run.stderr).toBe(1);
      const lines = humanLines(run.stderr);
      expect(lines, run.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^trainsync: cannot connect to Redis at redis:\/\/user:\*\*\*@127\.0\.0\.1:\d+\/x \(REDIS_URL\): the server accepted the connection and closed it before answering/);
      // Given up after the drops, not after the 60 s wait: the line says no "waited".
      expect(lines[0]).not.toMatch(/waited|gave up after/);
      expect(run.stderr).not.toContain('s3cret-pw');
    } finally {
      await server.close();
    }
  });

  it("REDIS_URL at the simulator's own HTTP port: named, not waited for", async () => {
    const run = await runCli(['sync', 'courses'], env({ REDIS_URL: `redis://${new URL(sim.url).host}`, TRAINSYNC_REDIS_TIMEOUT_MS: '60000' }));
    expect(run.code).not.toBe(0);
    const lines = humanLines(run.stderr);
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toContain('REDIS_URL');
    expect(lines[0]).not.toMatch(/waited|gave up after/);
  });

  it.each<{ service: string; variable: string; scheme: string; more: Record<string, string> }>([
    { service: 'Redis', variable: 'REDIS_URL', scheme: 'redis', more: { TRAINSYNC_REDIS_TIMEOUT_MS: '60000' } },
    { service: 'Postgres', variable: 'DATABASE_URL', scheme: 'postgres', more: {} },
  ])('$variable at a port that never answers: "connecting to … (waiting up to N s)", password masked', async ({ variable, scheme, more }) => {
    const server = await tcpServer('silent');
    const cli = startCli(['sync', 'courses'], env({ [variable]: server.url(scheme), ...more }));
    try {
      const line = await waitFor(async () => humanLines(cli.output()).find((l) => l.includes('connecting to')) ?? logRecords(cli.output()).find((r) => String(r.msg).includes('connecting to'))?.msg, 60_000, 'the connecting notice');
      expect(String(line)).toMatch(new RegExp(`connecting to ${scheme}://user:\\*\\*\\*@127\\.0\\.0\\.1:\\d+/x \\(waiting up to \\d+ s\\): .* check ${variable}`));
      expect(cli.output()).not.toContain('s3cret-pw');
    } finally {
      cli.kill('SIGINT');
      await cli.done;
      await server.close();
    }
  });
});

describe('a worker runs the job the command enqueued', () => {
  let database: TestDatabase;
  let worker: WorkerProcess | undefined;
  const prefix = testPrefix();
  const env = (more: Record<string, string> = {}): Record<string, string> => cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_METRICS_PORT: '0', ...more });

  beforeAll(async () => {
    database = databases[1]!;
    worker = startWorkerProcess(env());
    await worker.ready;
  });
  afterAll(async () => {
    worker?.child.kill('SIGTERM');
    await worker?.exited;
    await dropPrefix(prefix);
  });

  it('with another API key here: exit 2, naming the key as the difference (never the key), not reported as ok', async () => {
    const run = await runCli(['sync', 'courses'], env({ TRAINSYNC_API_KEY: 'not-the-workers-key' }));
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(2);
    const last = humanLines(run.stderr).at(-1) ?? '';
    expect(last).toMatch(/^trainsync: worker \S+ ran courses with settings other than this command's: API key \(sha256 [0-9a-f]{8}… on the worker, [0-9a-f]{8}… here\)/);
    expect(last).not.toMatch(/platform origin|database \(/);
    expect(`${run.stdout}${run.stderr}`).not.toContain('not-the-workers-key');
    expect(`${run.stdout}${run.stderr}`).not.toContain(sim.apiKey);
    expect(run.stdout).toMatch(/│ courses +│ NOT OURS/);
    expect(run.stdout).not.toMatch(/│ courses +│ ok/);
  });

  it('with another database here: exit 2, naming the database', async () => {
    const other = databases[2]!;
    const run = await runCli(['sync', 'courses'], env({ DATABASE_URL: other.url }));
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(2);
    expect(humanLines(run.stderr).at(-1)).toMatch(/settings other than this command's: database \(worker 127\.0\.0\.1:5432\/\S+, here 127\.0\.0\.1:5432\/\S+\)/);
  });

  it('with the same settings: exit 0, and on a terminal the summary says which worker ran it', async () => {
    const run = await runInTerminal(['sync', 'courses'], env(), 120);
    expect(run.code, run.raw.slice(-2000)).toBe(0);
    expect(run.screen.join('\n')).toMatch(/courses: run by worker \S+:\d+, with the same settings as this command/);
    const json = await runCli(['sync', 'courses', '--json'], env());
    expect(json.code, json.stderr).toBe(0);
    const [outcome] = JSON.parse(json.stdout) as Array<{ processedBy?: string; status: string }>;
    expect(outcome).toMatchObject({ status: 'completed', processedBy: expect.stringMatching(/:\d+$/) });
  });
});
