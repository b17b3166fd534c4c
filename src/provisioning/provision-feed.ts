import { basename, resolve } from 'node:path';
import { isNotOffered, PlatformError } from '../platform/errors.ts';
import type { PlatformUser } from '../platform/schemas.ts';
import type { PlatformClient } from '../platform/types.ts';
import type { PgLender } from '../warehouse/transaction.ts';
import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import { orgScoped } from '../queue/org-scope.ts';
import { loadAppliedEmployees } from './apply/applied-state.ts';
import { recordFeed } from './apply/audit.ts';
import { enqueuePlan, waitForActions, type ApplyDeps, type ApplyResult, type EnqueueResult } from './apply/enqueue.ts';
import { insertAdoptedIdentities } from './apply/identities.ts';
import { errorMessage } from '../lib/errors.ts';
import { refreshEmployeeAccounts, type EmployeeSnapshotCounts } from '../warehouse/load-employees.ts';
import { feedFormatFor, readFeed } from './feed/read.ts';
import type { ColumnMap, FeedFormat, FeedReadResult, FeedRow, ReadFeedOptions } from './feed/types.ts';
import { snapshotFeed } from './snapshot-feed.ts';
import { holdPlan, supersedeHeldPlans } from './held-plans.ts';
import { adoptExistingAccounts } from './plan/adopt.ts';
import { planProvisioning } from './plan/plan.ts';
import type { AccessRemovedPolicy, AppliedEmployee, MaxDisable, Plan, PlanMode, PlatformView } from './plan/types.ts';
import { loadLeaverSince, readPlatformView, viewFromUsers } from './platform-view.ts';

/** How a plan treats the platform's current state (TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, TRAINSYNC_DRIFT_ACCESS_REMOVED). */
export interface DriftSettings {
  freshnessMinutes: number;
  accessRemoved: AccessRemovedPolicy;
}

export const DEFAULT_DRIFT_SETTINGS: DriftSettings = { freshnessMinutes: 15, accessRemoved: 'restore' };

/** What a provisioning run needs: the apply side's parts, the platform, and a lent client for its lock. */
export interface ProvisionDeps extends ApplyDeps {
  /** The organisation's own client (its key): the plan reads that organisation's accounts. */
  platform: PlatformClient;
  withPgClient: PgLender;
  /** Default DEFAULT_DRIFT_SETTINGS. */
  drift?: DriftSettings | undefined;
}

/**
 * Serialises plan-and-enqueue between provisioning runs, `reconcile --fix` and SCIM changes of
 * one organisation (any process, one database): `provisionLock(org)`. Organisations plan
 * side by side: their applied states, audit rows and accounts are disjoint.
 */
export const PROVISION_LOCK = 'trainsync:provision';

/** The provisioning lock of one organisation (`default` keeps the bare name). */
export function provisionLock(org: string): string {
  return orgScoped(org, PROVISION_LOCK);
}

export interface ProvisionOptions {
  file: string;
  format?: FeedFormat | undefined;
  map?: ColumnMap | undefined;
  /** The rest of a profile's reading (delimiter, encoding, status words, leaver rule, attributes). */
  reading?: Omit<ReadFeedOptions, 'format' | 'map'> | undefined;
  mode: PlanMode;
  dryRun: boolean;
  maxDisable?: MaxDisable | undefined;
  force: boolean;
  /** Called once the plan is known, before anything is enqueued (the CLI prints it). */
  onPlan?: (result: ProvisionResult) => void;
  onProgress?: (finished: number, total: number, byKind: ReadonlyMap<string, { done: number; total: number }>) => void;
  /** The feed, already read from `file` with these options (the command reads it first, to guard it). */
  feed?: FeedReadResult | undefined;
}

export interface SeatsInfo {
  free: number | undefined;
  note: string;
}

export interface ProvisionResult {
  feed: FeedReadResult;
  plan: Plan;
  /** Accounts found on the platform and taken as identities (first run only). */
  adopted: number;
  adoptionNote?: string;
  seats: SeatsInfo;
  /** Requests made to read the platform's accounts for the plan (0 when training.users was fresh). */
  platformRequests: number;
  /** Set when the plan was applied (not a dry run, not refused). */
  applied?: ApplyResult;
  /** The feed's snapshot into training.employees, taken when the plan was applied. */
  employees?: EmployeeSnapshotCounts;
  /** Why that snapshot failed (the actions were enqueued all the same). */
  employeesError?: string;
  /** The plan the disable limit refused, kept for review in the console (`trainsync.held_plans`). */
  heldPlanId?: number;
}

/** The platform ids of the applied employees a feed's rows name. */
export function touchedAccounts(rows: readonly FeedRow[], applied: readonly AppliedEmployee[]): string[] {
  const byEmployee = new Map(applied.map((a) => [a.employeeId, a.platformUserId]));
  return [...new Set(rows.flatMap((r) => {
    const id = byEmployee.get(r.employeeId);
    return id ? [id] : [];
  }))];
}

/** Every account of the organisation, or undefined when the platform offers no GET users. */
export async function listAllUsers(platform: PlatformClient): Promise<PlatformUser[] | undefined> {
  const users: PlatformUser[] = [];
  try {
    for await (const page of platform.listUsers({})) users.push(...page.records);
  } catch (error) {
    if (isNotOffered(error)) return undefined;
    throw error;
  }
  return users;
}

/** Free seats from GET users/seats; undefined (no seat check) without an unlimited plan. */
export async function freeSeats(platform: PlatformClient): Promise<SeatsInfo> {
  try {
    const seats = await platform.getSeats();
    const free = Math.max(0, seats.totalSeats - seats.seatsInUse);
    return { free, note: `${seats.seatsInUse} of ${seats.totalSeats} seats in use, ${free} free` };
  } catch (error) {
    if (error instanceof PlatformError && error.code === 'NO_UNLIMITED_PLAN') return { free: undefined, note: 'seats: not applicable (NO_UNLIMITED_PLAN); creates are not checked against seats' };
    throw error;
  }
}

/**
 * What `trainsync provision` does, as a function: reads the feed, adopts existing
 * accounts on a first run, plans against the applied state and the free seats,
 * records the feed, and, unless it is a dry run or the plan is refused, enqueues
 * the actions, snapshots the feed into training.employees and waits for the actions.
 * Nothing is enqueued, no identity written and no employee changed, when
 * the feed file itself cannot be read or a limit is exceeded without `force`.
 */
export async function provisionFeed(deps: ProvisionDeps, options: ProvisionOptions): Promise<ProvisionResult> {
  const format = options.format ?? feedFormatFor(options.file);
  const feed = options.feed ?? await readFeed(options.file, { ...options.reading, format, ...(options.map ? { map: options.map } : {}) });
  const planAndEnqueue = async (): Promise<{ planned: ProvisionResult; enqueued?: EnqueueResult; snapshot?: Pick<ProvisionResult, 'employees' | 'employeesError'> }> => {
    const applied = await loadAppliedEmployees(deps.db, deps.org);
    const drift = deps.drift ?? DEFAULT_DRIFT_SETTINGS;
    let adopted: ReturnType<typeof adoptExistingAccounts> = [];
    let adoptionNote: string | undefined;
    let seats: SeatsInfo = { free: undefined, note: 'seats: not checked (the feed could not be read)' };
    let platform: { view: PlatformView | undefined; note?: string; requests: number } = { view: undefined, note: 'the feed could not be read', requests: 0 };
    let leaverSince: Map<string, string> | undefined;
    if (feed.fileErrors.length === 0) {
      if (applied.length === 0 && feed.rows.length > 0) {
        const users = await listAllUsers(deps.platform);
        if (users === undefined) {
          adoptionNote = 'first run: the platform offers no GET users, so existing accounts could not be adopted; creates of existing e-mails adopt them one by one';
          platform = { view: undefined, note: 'the platform offers no GET users', requests: 1 };
        } else {
          adopted = adoptExistingAccounts(feed.rows, applied, users);
          adoptionNote = `first run: ${adopted.length} of ${users.length} existing accounts match feed rows and are adopted as known employees`;
          // The listing just read is the platform's state: no second read.
          platform = { view: viewFromUsers(users), requests: Math.max(1, Math.ceil(users.length / 50)) };
        }
      } else {
        // A delta feed looks only at its own rows' accounts; a full one at every applied employee.
        const touchedIds = options.mode === 'delta' ? touchedAccounts(feed.rows, applied) : undefined;
        platform = await readPlatformView(deps, { freshnessMinutes: drift.freshnessMinutes, touchedIds });
      }
      seats = await freeSeats(deps.platform);
      leaverSince = await loadLeaverSince(deps.db, deps.org);
    }
    const plan = planProvisioning({
      ...feed,
      applied: [...applied, ...adopted],
      mode: options.mode,
      options: { maxDisable: options.maxDisable, force: options.force, freeSeats: seats.free, accessRemoved: drift.accessRemoved },
      file: basename(options.file),
      platform: platform.view,
      platformNote: platform.note,
      leaverSince,
    });
    await recordFeed(deps.db, deps.org, {
      hash: feed.hash,
      path: resolve(options.file),
      format,
      mode: options.mode,
      dryRun: options.dryRun,
      rows: feed.rows.length,
      errors: feed.errors.length + plan.errors.length,
      actions: plan.actions.length,
      refused: plan.refused?.reason ?? null,
    });
    // A plan the disable guard refused is kept, so a person can review and approve it in the console.
    const heldPlanId = !options.dryRun && plan.refused?.reason === 'max-disable' ? await holdPlan(deps.withPgClient, deps.org, plan, { ...feed, file: basename(options.file) }) : undefined;
    const planned: ProvisionResult = { feed, plan, adopted: adopted.length, seats, platformRequests: platform.requests, ...(adoptionNote ? { adoptionNote } : {}), ...(heldPlanId === undefined ? {} : { heldPlanId }) };
    options.onPlan?.(planned);
    if (options.dryRun || plan.refused !== undefined) return { planned };
    if (adopted.length > 0) await insertAdoptedIdentities(deps.db, deps.org, adopted);
    await supersedeHeldPlans(deps.db, deps.org);
    const enqueued = await enqueuePlan(deps, plan, feed.hash);
    // The warehouse's copy of the feed; a failure here must not abandon the actions just enqueued.
    const snapshot = await snapshotFeed(deps.withPgClient, deps.org, feed, { mode: options.mode }).then(
      (employees) => ({ employees }),
      (error: unknown) => {
        deps.log.warn({ err: error }, 'employee snapshot failed');
        return { employeesError: errorMessage(error) };
      },
    );
    return { planned, enqueued, snapshot };
  };
  // The lock covers planning and enqueuing only: the wait may be long. A dry run changes nothing and takes none.
  const { planned, enqueued, snapshot } = options.dryRun
    ? await planAndEnqueue()
    : await withAdvisoryLock(deps.withPgClient, provisionLock(deps.org), planAndEnqueue);
  if (enqueued === undefined) return planned;
  const audit = await waitForActions(deps, [...enqueued.enqueued, ...enqueued.waitingOn], options.onProgress);
  // Accounts created or adopted by this run are known now: give them to their employees.
  if (snapshot?.employees) await refreshEmployeeAccounts(deps.withPgClient, deps.org).catch((error: unknown) => deps.log.warn({ err: error }, 'employee accounts not refreshed'));
  return { ...planned, ...snapshot, applied: { ...enqueued, audit } };
}
