/**
 * Applying 2,000 provisioning actions (disables, enables, group adds) at a request
 * budget of 50/s against a simulator in a child process, through the real path:
 * audit rows, BullMQ flows, the in-process worker, the shared request budget.
 * Target: at least 90% of the budget achieved, and never more than 50 requests in any
 * sliding second (counted by the simulator).
 * Run: node bin/run-ts.js bench/provisioning-apply.ts
 */
import { scopedApp } from '../src/commands/options/scoped.ts';
import { owner } from '../test/helpers/owner.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { z } from 'zod';
import { startSimulatorChild } from './simulator-child.ts';
import { allJobs } from '../jobs/index.ts';
import { createApp } from '../src/runtime/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/runtime/log.ts';
import { enqueuePlan, waitForActions } from '../src/provisioning/apply/enqueue.ts';
import type { FeedRow } from '../src/provisioning/feed/types.ts';
import { insertAdoptedIdentities } from '../src/provisioning/apply/identities-store.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import type { AppliedEmployee } from '../src/provisioning/plan/types.ts';
import { DEFAULT_SIZES, generateState } from '../src/simulator/dataset.ts';

const ACTIONS = 2_000;
const BUDGET = 50;
const SIM_OPTIONS = { seed: 77, sizes: { users: ACTIONS + 100, groups: 5, courses: 5, results: 10 } };

export interface ProvisioningApplyBench {
  actions: number;
  seconds: number;
  /** Requests per second from the first request to the last (the limiter's own rate). */
  achievedPerSecond: number;
  /** Requests per second over `seconds`, which includes enqueuing and the final wait. */
  wallPerSecond: number;
  budget: number;
  maxInAnySecond: number;
}

/** The organisation as the child generates it (same seed, same sizes): applied state and a feed with one change each. */
function scenario(): { applied: AppliedEmployee[]; rows: FeedRow[] } {
  const state = generateState({ seed: SIM_OPTIONS.seed, sizes: { ...DEFAULT_SIZES, ...SIM_OPTIONS.sizes }, unlimitedPlan: true, usersEndpoint: true, dateBounds: 'exclusive-instant' });
  const applied: AppliedEmployee[] = [];
  const rows: FeedRow[] = [];
  state.users.slice(0, ACTIONS).forEach((u, i) => {
    const groups = state.groups.filter((g) => g.memberIds.has(u.id)).map((g) => g.id).sort();
    const employeeId = u.organisationIdentifier!;
    applied.push({ employeeId, email: u.email, platformUserId: u.id, firstName: u.firstName, lastName: u.lastName, active: u.hasAccess, groups, role: u.role, organisationIdentifier: employeeId, version: 1 });
    const missing = state.groups.find((g) => !g.memberIds.has(u.id));
    // Inactive → enable; every fourth active one → disable; the others join a group.
    const status = !u.hasAccess ? 'active' : i % 4 === 0 || !missing ? 'inactive' : 'active';
    const wanted = u.hasAccess && status === 'active' && missing ? [...groups, missing.id].sort() : groups;
    rows.push({ line: i + 2, employeeId, email: u.email, emailDisplay: u.email, firstName: u.firstName, lastName: u.lastName, status, groups: wanted, role: u.role, organisationIdentifier: employeeId });
  });
  return { applied, rows };
}

export async function benchProvisioningApply(): Promise<ProvisioningApplyBench> {
  const sim = await startSimulatorChild(SIM_OPTIONS);
  const dbName = `trainsync_bench_${randomBytes(4).toString('hex')}`;
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  try {
    const config = loadConfig({
      TRAINSYNC_API_URL: sim.url,
      TRAINSYNC_API_KEY: sim.apiKey,
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${dbName}`,
      TRAINSYNC_QUEUE_PREFIX: prefix,
      TRAINSYNC_REQUESTS_PER_SECOND: String(BUDGET),
      TRAINSYNC_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
    });
    const app = await createApp(config, createLogger(config.LOG_LEVEL), { jobs: allJobs, migrate: true });
    try {
      const { applied, rows } = scenario();
      await insertAdoptedIdentities(owner(app).scope('default'), applied);
      const plan = planProvisioning({ rows, invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied, mode: 'delta', options: { force: true } });
      if (plan.actions.length !== ACTIONS) throw new Error(`expected ${ACTIONS} actions, planned ${plan.actions.length}`);
      await fetch(`${sim.url}/__simulator/requests/reset`, { method: 'POST' });
      const started = performance.now();
      const enqueued = await enqueuePlan(scopedApp(app, DEFAULT_ORG), plan, null);
      const audit = await waitForActions(scopedApp(app, DEFAULT_ORG), enqueued.enqueued);
      const seconds = (performance.now() - started) / 1000;
      const failed = audit.filter((r) => r.status !== 'succeeded');
      if (failed.length > 0) throw new Error(`${failed.length} actions did not succeed, e.g. ${JSON.stringify(failed[0])}`);
      const summary = z
        .object({ total: z.number(), maxInAnyWindow: z.number(), firstAt: z.number(), lastAt: z.number() })
        .parse(await (await fetch(`${sim.url}/__simulator/requests/summary`)).json());
      // The rate of the request stream itself (first to last request); `seconds` also counts enqueuing and the final wait.
      const streamSeconds = (summary.lastAt - summary.firstAt) / 1000;
      return {
        actions: audit.length,
        seconds: Number(seconds.toFixed(2)),
        achievedPerSecond: Number((summary.total / streamSeconds).toFixed(1)),
        wallPerSecond: Number((summary.total / seconds).toFixed(1)),
        budget: BUDGET,
        maxInAnySecond: summary.maxInAnyWindow,
      };
    } finally {
      await app.close();
    }
  } finally {
    sim.stop();
    const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
    await admin.connect();
    await admin.query(`drop database if exists ${dbName} with (force)`).finally(() => admin.end());
    const redis = new Redis('redis://127.0.0.1:6379');
    for (const pattern of [`${prefix}*`, `b_${prefix}*`]) {
      for await (const keys of redis.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys);
    }
    redis.disconnect();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await benchProvisioningApply();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
