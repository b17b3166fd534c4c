/**
 * Planning 50,000 employees against the platform as it is now: every account read
 * through GET users (the real client, pages of 50, the shared Redis budget) from a
 * simulator in a child process, then the plan with 2% feed changes and 0.2% drift
 * (leavers enabled again by hand, accounts deleted by hand).
 *
 * The request budget is raised so the bench is quick; the request time at the default
 * budget is requests ÷ 10 per second, printed beside the plan time (the client's CPU
 * for the read plus the planner's), whose target is under 5 s.
 * Run: node bin/run-ts.js bench/provisioning-plan-platform.ts
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { startSimulatorChild } from './simulator-child.ts';
import { createLogger } from '../src/runtime/log.ts';
import { createPlatformClient } from '../src/platform/client.ts';
import type { FeedRow } from '../src/provisioning/feed/types.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import type { AppliedEmployee } from '../src/provisioning/plan/types.ts';
import { readAccountsFromApi } from '../src/provisioning/platform-view.ts';
import { DEFAULT_SIZES, generateState } from '../src/simulator/dataset.ts';

const EMPLOYEES = 50_000;
const DEFAULT_BUDGET = 10;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SIM_OPTIONS = { seed: 50, sizes: { users: EMPLOYEES, groups: 40, courses: 5, results: 10 } };

export interface ProvisioningPlanPlatformBench {
  employees: number;
  requests: number;
  /** Wall time of the read at a raised budget (the simulator answers at once). */
  readMs: number;
  /** CPU of this process during the read: parsing and validating the pages. */
  readCpuMs: number;
  planMs: number;
  /** readCpuMs + planMs: the part that is not waiting for the platform. */
  planTimeMs: number;
  /** requests ÷ the default budget of 10 per second. */
  requestSecondsAtDefaultBudget: number;
  actions: number;
  repairs: number;
  peakRssMb: number;
}

/** The organisation as the child generates it; applied state and feed with 2% changes and 0.2% drift. */
function scenario(): { applied: AppliedEmployee[]; rows: FeedRow[] } {
  const state = generateState({ seed: SIM_OPTIONS.seed, sizes: { ...DEFAULT_SIZES, ...SIM_OPTIONS.sizes }, unlimitedPlan: true, usersEndpoint: true, dateBounds: 'exclusive-instant' });
  const applied: AppliedEmployee[] = [];
  const rows: FeedRow[] = [];
  state.users.forEach((u, i) => {
    const employeeId = u.organisationIdentifier!;
    const groups = state.groups.filter((g) => g.memberIds.has(u.id)).map((g) => g.id).sort();
    const change = i % 500;
    // Drift: trainsync disabled them, the platform shows access (enabled again by hand).
    const reEnabled = u.hasAccess && i % 1000 === 7;
    // Drift: the account trainsync created is gone from the platform.
    const deleted = u.hasAccess && i % 1000 === 9;
    applied.push({
      employeeId,
      email: u.email,
      platformUserId: deleted ? randomUUID() : u.id,
      firstName: u.firstName,
      lastName: u.lastName,
      active: reEnabled ? false : u.hasAccess,
      groups,
      role: u.role,
      organisationIdentifier: employeeId,
      version: 1 + (i % 9),
    });
    if (change === 1) return; // leaver: missing from the feed
    const status = reEnabled || change === 4 || !u.hasAccess ? 'inactive' : 'active';
    const wanted = change === 3 ? [state.groups[i % 40]!.id] : groups;
    rows.push({ line: i + 2, employeeId, email: u.email.toLowerCase(), emailDisplay: u.email, firstName: u.firstName, lastName: u.lastName, status, groups: wanted, role: u.role, organisationIdentifier: employeeId });
  });
  return { applied, rows };
}

async function dropKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

export async function benchProvisioningPlanPlatform(): Promise<ProvisioningPlanPlatformBench> {
  const sim = await startSimulatorChild(SIM_OPTIONS);
  const keyPrefix = `bench-${randomUUID()}`;
  const client = createPlatformClient({ apiUrl: sim.url, apiKey: sim.apiKey, log: createLogger('warn'), redisUrl: REDIS_URL, keyPrefix, requestsPerSecond: 10_000 });
  try {
    const { applied, rows } = scenario();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const { view, requests } = await readAccountsFromApi(client);
    const t1 = performance.now();
    const cpu = process.cpuUsage(cpu0);
    if (view === undefined) throw new Error('the simulator did not offer GET users');
    const plan = planProvisioning({ rows, invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied, mode: 'full', options: { force: true }, file: 'hr.csv', platform: view });
    const t2 = performance.now();
    const readCpuMs = Math.round((cpu.user + cpu.system) / 1000);
    const planMs = Math.round(t2 - t1);
    return {
      employees: EMPLOYEES,
      requests,
      readMs: Math.round(t1 - t0),
      readCpuMs,
      planMs,
      planTimeMs: readCpuMs + planMs,
      requestSecondsAtDefaultBudget: Math.round(requests / DEFAULT_BUDGET),
      actions: plan.actions.length,
      repairs: plan.repairs,
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    };
  } finally {
    await client.close();
    sim.stop();
    await dropKeys(keyPrefix);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await benchProvisioningPlanPlatform();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
