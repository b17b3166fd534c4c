/**
 * What both SCIM benches stand up: a simulator child, a database of its own, and
 * `trainsync worker` serving SCIM on a free port with its own queue prefix; and how they
 * take it all down again.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freePort } from '../test/helpers/own-services.ts';
import { createBenchDatabase } from './admin-query.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';
import { startSimulatorChild } from './simulator-child.ts';
import { startWorkerChild } from './worker-child.ts';

/** Accounts the platform holds before the bench's creates. */
export const EXISTING_USERS = 20;

export interface ScimBenchSetup {
  sim: Awaited<ReturnType<typeof startSimulatorChild>>;
  database: Awaited<ReturnType<typeof createBenchDatabase>>;
  worker: ReturnType<typeof startWorkerChild>;
  adminPool: pg.Pool;
  prefix: string;
  token: string;
  port: number;
  close(): Promise<void>;
}

export async function startScimBench(options: { seed: number; totalSeats: number }): Promise<ScimBenchSetup> {
  const sim = await startSimulatorChild({ seed: options.seed, sizes: { users: EXISTING_USERS, courses: 4, results: 10, groups: 3 }, totalSeats: options.totalSeats });
  const database = await createBenchDatabase();
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  const token = randomBytes(32).toString('hex');
  const port = await freePort();
  const worker = startWorkerChild({
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: database.url,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_SCIM_TOKEN: token,
    TRAINSYNC_SCIM_PORT: String(port),
    TRAINSYNC_SCIM_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ...(process.env.PROF_DIR ? { PROF_DIR: process.env.PROF_DIR } : {}),
  });
  const adminPool = new pg.Pool({ connectionString: database.url, max: 1 });
  const close = async (): Promise<void> => {
    worker.child.kill('SIGTERM');
    await new Promise((resolve) => (worker.child.exitCode === null ? worker.child.once('exit', resolve) : resolve(undefined)));
    sim.stop();
    await adminPool.end();
    await database.drop();
    await deleteBenchKeys('redis://127.0.0.1:6379', prefix);
  };
  return { sim, database, worker, adminPool, prefix, token, port, close };
}
