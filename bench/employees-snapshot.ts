/**
 * Snapshotting a 50,000-employee HR feed into training.employees / employee_history,
 * planning included. Setup (this process): a first feed snapshot into an empty
 * warehouse, and the matching applied state in trainsync.identities. Measured (a fresh
 * child process, so its peak RSS is that of one provisioning run): a second feed with 2%
 * of employees changed (leavers, inactive, department, manager and location moves,
 * renames, joiners), read + applied state loaded + planned + snapshotted.
 *
 *   node bin/run-ts.js bench/employees-snapshot.ts [employees]
 *
 * Uses its own database on DATABASE_URL's server (default 127.0.0.1) and drops it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createLogger } from '../src/runtime/log.ts';
import { readFeed } from '../src/provisioning/feed/read.ts';
import { loadAppliedEmployees } from '../src/provisioning/apply/applied-state.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import { snapshotFeed } from '../src/provisioning/snapshot-feed.ts';
import type { EmployeeSnapshotCounts } from '../src/provisioning/employees-store.ts';
import { migrate } from '../src/warehouse/migrator.ts';
import { createDb, createPool } from '../src/warehouse/pool.ts';
import { createScopes } from '../src/warehouse/scope.ts';
import { createBenchDatabase } from './admin-query.ts';

const DEPARTMENTS = ['Finance', 'Sales', 'Engineering', 'Operations', 'Legal', 'HR', 'Support', 'Marketing'];
const LOCATIONS = ['London', 'Lisbon', 'Berlin', 'Utrecht', 'Dublin', 'Madrid'];

export interface EmployeesSnapshotBench {
  employees: number;
  changedFraction: number;
  firstSnapshotMs: number;
  firstCounts: Omit<EmployeeSnapshotCounts, 'at'>;
  /** The second feed, as a provisioning run does it (a fresh process). */
  readMs: number;
  /** Loading the applied state (trainsync.identities) and planning. */
  planMs: number;
  snapshotMs: number;
  totalMs: number;
  secondCounts: Omit<EmployeeSnapshotCounts, 'at'>;
  historyRows: number;
  /** Peak RSS of the measured process. */
  peakRssMb: number;
  /** Its RSS before reading (Node, tsx and the modules). */
  rssBeforeMb: number;
  actions: number;
}

type Measured = Pick<EmployeesSnapshotBench, 'readMs' | 'planMs' | 'snapshotMs' | 'totalMs' | 'secondCounts' | 'peakRssMb' | 'rssBeforeMb' | 'actions'>;

const id = (i: number): string => `E${String(i).padStart(6, '0')}`;

/** Writes a feed of `employees` rows; `second` applies the 2% changes (10 of every 500). */
async function writeFeed(file: string, employees: number, second: boolean): Promise<void> {
  const out = createWriteStream(file);
  let batch = 'employee_id;email;first_name;last_name;status;Department;Manager;Location;Hire date\r\n';
  const total = second ? employees + employees / 500 : employees;
  for (let i = 0; i < total; i += 1) {
    const change = second ? i % 500 : -1;
    if (change === 1) continue; // leaver: missing from the feed
    const joiner = i >= employees;
    let department = DEPARTMENTS[i % DEPARTMENTS.length]!;
    let manager = id(i - (i % 50));
    let location = LOCATIONS[i % LOCATIONS.length]!;
    let last = `Last ${i}`;
    const status = change === 2 || change === 3 ? 'terminated' : 'active';
    if (change === 4 || change === 5 || change === 6) department = DEPARTMENTS[(i + 1) % DEPARTMENTS.length]!;
    if (change === 7) manager = id(i - (i % 50) + 1);
    if (change === 8) location = LOCATIONS[(i + 1) % LOCATIONS.length]!;
    if (change === 9) last = `Renamed ${i}`;
    const name = joiner ? 'Joiner' : 'First';
    batch += `${id(i)};${id(i).toLowerCase()}@example.com;${name};${last};${status};${department};${manager};${location};${1 + (i % 28)}-${1 + (i % 12)}-20${10 + (i % 15)}\r\n`;
    if (batch.length > 65_536) {
      if (!out.write(batch)) await once(out, 'drain');
      batch = '';
    }
  }
  out.end(batch);
  await once(out, 'finish');
}

/** The applied state a provisioning run would find after the first feed (one identity per employee). */
async function seedIdentities(pool: pg.Pool, employees: number): Promise<void> {
  await pool.query(
    `insert into trainsync.identities (org, employee_id, email, platform_user_id, first_name, last_name, role, organisation_identifier, active)
     select 'default', id, lower(id) || '@example.com', md5(id)::uuid, 'First', 'Last ' || i, 'USER', id, true
     from generate_series(0, $1::int - 1) i, lateral (select 'E' || lpad(i::text, 6, '0') as id) k`,
    [employees],
  );
}

/** The measured part, in the process that runs it: read, load the applied state, plan, snapshot. */
async function measure(url: string, file: string): Promise<Measured> {
  const pool = createPool(url, { max: 2, applicationName: 'trainsync-bench' });
  const db = createDb(pool);
  // The owner's pool, unbound (no row security): the snapshot's own cost.
  const scope = createScopes(pool, createLogger('silent'), { rowSecurity: false }).scope('default');
  try {
    const rssBeforeMb = Math.round(process.memoryUsage().rss / 1048576);
    const t1 = performance.now();
    const feed = await readFeed(file);
    const t2 = performance.now();
    const applied = await loadAppliedEmployees(scope);
    const plan = planProvisioning({ ...feed, applied, mode: 'full', options: { force: true }, file: path.basename(file) });
    const t3 = performance.now();
    const counts = await snapshotFeed(scope, feed, { mode: 'full' });
    const t4 = performance.now();
    return {
      readMs: Math.round(t2 - t1),
      planMs: Math.round(t3 - t2),
      snapshotMs: Math.round(t4 - t3),
      totalMs: Math.round(t4 - t1),
      secondCounts: strip(counts),
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      rssBeforeMb,
      actions: plan.actions.length,
    };
  } finally {
    await db.destroy();
  }
}

function measureInChild(url: string, file: string): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/run-ts.js', fileURLToPath(import.meta.url), '--measure', url, file], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!) as Measured) : reject(new Error(`measure exited with ${code}`))));
  });
}

function strip({ at: _at, ...counts }: EmployeeSnapshotCounts): Omit<EmployeeSnapshotCounts, 'at'> {
  return counts;
}

export async function benchEmployeesSnapshot(employees = 50_000): Promise<EmployeesSnapshotBench> {
  const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-bench-employees-'));
  const database = await createBenchDatabase();
  const url = database.url;
  const pool = createPool(url, { max: 2, applicationName: 'trainsync-bench' });
  try {
    await migrate(pool, createLogger('silent'));
    const scope = createScopes(pool, createLogger('silent'), { rowSecurity: false }).scope('default');
    const first = path.join(dir, 'hr-1.csv');
    const second = path.join(dir, 'hr-2.csv');
    await writeFeed(first, employees, false);
    await writeFeed(second, employees, true);
    const t0 = performance.now();
    const firstCounts = await snapshotFeed(scope, await readFeed(first), { mode: 'full' });
    const firstSnapshotMs = Math.round(performance.now() - t0);
    await seedIdentities(pool, employees);
    await pool.query('vacuum analyze training.employees, training.employee_history, trainsync.identities');

    const measured = await measureInChild(url, second);
    if (measured.actions === 0) throw new Error('bench: the second feed planned nothing');
    const { rows } = await pool.query<{ n: number }>('select count(*)::int as n from training.employee_history');
    return { employees, changedFraction: 0.02, firstSnapshotMs, firstCounts: strip(firstCounts), ...measured, historyRows: rows[0]!.n };
  } finally {
    await pool.end();
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--measure') {
    process.stdout.write(`${JSON.stringify(await measure(process.argv[3]!, process.argv[4]!))}\n`);
  } else {
    const employees = process.argv[2] ? Number.parseInt(process.argv[2], 10) : 50_000;
    const figures = await benchEmployeesSnapshot(employees);
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  }
}
