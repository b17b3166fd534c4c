import { randomUUID } from 'node:crypto';
import { DEFAULT_ORG, type OrgSettings } from '../settings/orgs-file.ts';
import type { Config } from '../config.ts';
import { errorMessage } from '../lib/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { PlatformClient } from '../platform/types.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { tryAdvisoryLock } from '../warehouse/advisory-lock.ts';
import { fillNewAccounts, liveOpenActions } from '../provisioning/index.ts';
import { orgScoped } from '../queue/org-scope.ts';
import type { OrgScope, OrgScopes } from '../warehouse/scope.ts';
import type { AdvisoryLocks } from '../warehouse/lock-session.ts';
import { planUsers, UnplannedUsersError } from './batch.ts';
import { describeDatabaseError, describeRedisError } from '../lib/infra-errors.ts';
import { quarantinable } from './quarantine.ts';
import type { ChangeDeps } from './change.ts';
import { createBatcher } from './batcher.ts';
import { startScimServer, type ScimOrgRoute, type ScimServerOptions } from './server.ts';
import { resolveDeferredIds } from './resolve-ids.ts';
import type { ScimError } from './errors.ts';
import { employeeIdsFor, insertUsers, pendingUsers, quarantineUsers, type EmployeeIdChoice, type ScimUserRow } from './store.ts';
import type { ScimUserResource } from './user-mapping.ts';
import { checkPasswordAccepted, queueScimPassword } from './password.ts';
import { createRecentUsers } from './recent-users.ts';
import { ATTR } from '../lib/tracing/attributes.ts';

/** What planning one organisation's SCIM changes needs (the pipeline's deps and the SCIM disable limit). */
export function scimChangeDeps(deps: Pick<ScimServiceDeps, 'config' | 'locks' | 'queue' | 'platform' | 'log'>, scope: OrgScope): ChangeDeps {
  const { config } = deps;
  return {
    scope,
    locks: deps.locks,
    queue: deps.queue,
    log: deps.log,
    platform: () => deps.platform(scope.org),
    drift: { freshnessMinutes: config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, accessRemoved: config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
    scimMaxDisable: config.TRAINSYNC_SCIM_MAX_DISABLE,
  };
}


export interface ScimServiceDeps {
  config: Config;
  /** Each organisation's SCIM reaches its data through its scoped handle only. */
  scopes: Pick<OrgScopes, 'scope'>;
  /** The process's advisory locks. */
  locks: AdvisoryLocks;
  queue: JobQueue;
  /** An organisation's platform client (built on first use): only the resolve pass of deferred ids and drift reads call it. */
  platform: (org: string) => PlatformClient;
  log: Logger;
  /** Called with the number of Users just quarantined (trainsync_scim_quarantined_total). */
  onQuarantined?: (org: string, count: number) => void;
  /** Called once per request answered (the SCIM request metrics). */
  onAnswered?: ScimServerOptions['onAnswered'];
}

export interface ScimService {
  port: number;
  /** The organisations served (those with a SCIM token). */
  orgs: readonly string[];
  /** Resolves once every change submitted so far is planned (tests, shutdown). */
  idle(): Promise<void>;
  /** Stops taking requests (those in flight finish), then the sweep. */
  close(): Promise<void>;
}

/** A new User to insert; its employee id is chosen in its batch, unless given (a second try). */
interface NewIntake {
  scimId: string;
  user: ScimUserResource;
  employeeId?: string;
}

/** Users planned per batch at most. */
const MAX_BATCH = 500;
/** Changes waiting for their plan past which an answer waits for its own (memory stays bounded if planning stalls). */
const MAX_PLAN_BACKLOG = 2 * MAX_BATCH;
/** How often a worker looks for deferred ids anyway (creates another worker queued). */
const RESOLVE_EVERY_MS = 60_000;
/**
 * How long a resolve pass that found creates still queued is not tried again (unless the minute's
 * pass is due): until they have run or waited MAX_WAIT_MS it has nothing to do, and asking costs
 * two queries over the organisation's create actions, which a steady load grows by thousands a minute.
 */
const RESOLVE_QUEUED_BACKOFF_MS = 5_000;
/** One resolve pass at a time per organisation, across workers. */
const RESOLVE_LOCK = 'trainsync:scim-resolve-ids';

const isError = (value: unknown): value is ScimError => value instanceof Error;

/** One organisation's SCIM: its route (token, context), its batches and its sweep. */
interface OrgScim {
  slug: string;
  route: ScimOrgRoute;
  idle(): Promise<void>;
  sweep(): Promise<void>;
}

function startOrgScim(deps: ScimServiceDeps, org: OrgSettings & { scimToken: Buffer }): OrgScim {
  const { config } = deps;
  const log = deps.log.child({ org: org.slug });
  const scope = deps.scopes.scope(org.slug);
  // Postgres or Redis out of reach: a batch is not split (each half would fail alike) and nothing is quarantined.
  const outage = (error: unknown): boolean =>
    describeDatabaseError(error, config.DATABASE_URL) !== undefined || describeRedisError(error, config.REDIS_URL) !== undefined;
  const split = { split: (error: unknown) => !outage(error instanceof UnplannedUsersError ? error.cause : error) };
  const quarantined = (count: number): void => {
    if (count > 0) deps.onQuarantined?.(org.slug, count);
  };
  const changeDeps = scimChangeDeps({ ...deps, log }, scope);
  // The Users this process wrote last: a PATCH right after a create is written without reading the User.
  const recent = createRecentUsers();
  // Users submitted and not yet planned: the sweep leaves them to the batch they wait for.
  const inFlight = new Map<string, number>();
  // Set when creates were queued without their id lookup (and at start, and once a minute, for other workers' creates).
  // Generations, not a flag: a batch that queues creates while a pass runs makes another pass due.
  let deferredGeneration = 1;
  let resolvedGeneration = 0;
  let lastResolve = Date.now();
  let resolveNotBefore = 0;
  // New Users arriving together: their employee ids and one insert (each gets its row or its 409), answered once it commits.
  const inserts = createBatcher<NewIntake, { answer: ScimUserRow | ScimError; choice: EmployeeIdChoice }>(
    async (intakes) => {
      const toChoose = intakes.filter((i) => i.employeeId === undefined);
      const chosen = new Map((await employeeIdsFor(scope, toChoose)).map((choice, k) => [toChoose[k]!.scimId, choice]));
      const choices = intakes.map((i) => chosen.get(i.scimId) ?? { employeeId: i.employeeId! });
      const inserted = await insertUsers(scope, intakes.map((i, k) => ({ scimId: i.scimId, user: i.user, employeeId: choices[k]!.employeeId })));
      return intakes.map((i, k) => ({ answer: inserted.get(i.scimId)!, choice: choices[k]! }));
    },
    (intake) => intake.scimId,
    MAX_BATCH,
    { ...split, span: { name: 'scim insert', attributes: { [ATTR.org]: org.slug } } },
  );
  // Users written and not planned yet, planned together: one snapshot, plan, audit write and enqueue.
  const plans = createBatcher<string, undefined>(
    async (scimIds) => {
      const outcome = await planUsers(changeDeps, scimIds, { unplannedOnly: true });
      if (outcome.deferredCreates > 0) deferredGeneration += 1;
      quarantined(outcome.quarantined.length);
      return scimIds.map(() => undefined);
    },
    (scimId) => scimId,
    MAX_BATCH,
    { ...split, span: { name: 'scim plan', attributes: { [ATTR.org]: org.slug } } },
  );
  /**
   * A User whose plan failed alone (its batch was split down to it) with a failure of its own:
   * quarantined at the version that failed, so the sweep stops trying it and it never shares
   * a batch again. Anything else (an outage, a conflict) is left pending for the sweep.
   */
  const quarantineFailed = async (scimId: string, error: unknown): Promise<boolean> => {
    if (!(error instanceof UnplannedUsersError) || !quarantinable(error.cause, outage)) return false;
    const version = error.versions.get(scimId);
    if (version === undefined) return false;
    const reason = `its change cannot be planned: ${errorMessage(error.cause)}`;
    const done = await quarantineUsers(scope, [{ scimId, version, reason }]);
    if (done.length > 0) {
      quarantined(done.length);
      log.warn({ scimId, version, reason }, 'SCIM User quarantined: its change cannot be planned (trainsync status lists it); a new PUT or PATCH of it plans it again');
    }
    return true;
  };
  const plan = async (scimId: string): Promise<void> => {
    inFlight.set(scimId, (inFlight.get(scimId) ?? 0) + 1);
    try {
      await plans.submit(scimId);
    } catch (error) {
      if (!(await quarantineFailed(scimId, error))) throw error;
    } finally {
      const left = inFlight.get(scimId)! - 1;
      if (left === 0) inFlight.delete(scimId);
      else inFlight.set(scimId, left);
    }
  };
  /**
   * The change is durable already (its row committed, pending): the answer need not wait for
   * the plan, unless asked to (a password's job must follow the create's) or the plans are
   * MAX_PLAN_BACKLOG behind (the answers then keep pace with them). A plan that fails leaves
   * the row pending: the sweep plans it.
   */
  const unplannedLogged = new WeakSet<object>();
  const submit = async (scimId: string, options: { wait?: boolean } = {}): Promise<void> => {
    if (options.wait === true || plans.backlog() >= MAX_PLAN_BACKLOG) return plan(scimId);
    void plan(scimId).catch((error: unknown) => {
      // A failed batch rejects each of its changes with the same error: one line for the batch.
      if (typeof error === 'object' && error !== null) {
        if (unplannedLogged.has(error)) return;
        unplannedLogged.add(error);
      }
      log.warn({ err: error, scimId }, `SCIM changes not planned (${errorMessage(error)}); they stay pending and the sweep plans them within ${config.TRAINSYNC_SCIM_SWEEP_MS * 2} ms`);
    });
  };
  const create = async (user: ScimUserResource, options: { wait?: boolean } = {}): Promise<ScimUserRow> => {
    const scimId = randomUUID();
    let { answer, choice } = await inserts.submit({ scimId, user });
    if (isError(answer) && choice.shared === undefined) {
      // Another create stating the same HR id committed first (a batch beside this one): this one is then not linked by it.
      const [again] = await employeeIdsFor(scope, [{ scimId, user }]);
      if (again!.employeeId !== choice.employeeId) {
        ({ answer, choice } = await inserts.submit({ scimId, user, employeeId: again!.employeeId }));
        choice = again!;
      }
    }
    if (isError(answer)) throw answer;
    recent.remember(answer);
    if (choice.shared) {
      log.warn(
        { scimId, userName: user.userName, externalId: choice.shared.named, sharedWith: choice.shared.with.scim_id, sharedWithUserName: choice.shared.with.user_name, employeeId: choice.employeeId },
        'SCIM User created with an externalId/employeeNumber another live User states: not linked to that HR employee (the first User keeps it); keyed by its e-mail',
      );
    }
    await submit(scimId, options);
    return answer;
  };
  const sweep = async (): Promise<void> => {
    const rows = (await pendingUsers(scope, config.TRAINSYNC_SCIM_SWEEP_MS, MAX_BATCH)).filter((r) => !inFlight.has(r.scim_id));
    // Employees whose actions are still queued would stay pending: not planned again each second (a steady load's
    // creates wait minutes for the budget), only once their actions have run.
    const busy = new Set(rows.length === 0 ? [] : (await liveOpenActions(changeDeps, [...new Set(rows.map((r) => r.employee_id))])).map((a) => a.employeeId));
    await Promise.all(rows.filter((r) => !busy.has(r.employee_id)).map((r) => submit(r.scim_id)));
    const periodic = Date.now() - lastResolve > RESOLVE_EVERY_MS;
    if ((deferredGeneration > resolvedGeneration && Date.now() >= resolveNotBefore) || periodic) {
      lastResolve = Date.now();
      const generation = deferredGeneration;
      const pass = await tryAdvisoryLock(deps.locks, orgScoped(org.slug, RESOLVE_LOCK), () =>
        resolveDeferredIds({ scope, platform: deps.platform(org.slug), log }),
      );
      // Queued creates still to run: tried again at the next sweep.
      if (pass.acquired && (pass.value.ran ? !pass.value.createsQueued : pass.value.reason === 'none')) resolvedGeneration = Math.max(resolvedGeneration, generation);
      resolveNotBefore = pass.acquired && !pass.value.ran && pass.value.reason === 'creates-queued' ? Date.now() + RESOLVE_QUEUED_BACKOFF_MS : 0;
      // Ids just learned (or learned meanwhile by a later action's own lookup) reach the employee rows.
      if (periodic || (pass.acquired && pass.value.ran && pass.value.found > 0)) await fillNewAccounts(scope);
    }
  };
  return {
    slug: org.slug,
    route: {
      token: org.scimToken,
      context: {
        scope, submit, create, recent,
        checkPassword: () => checkPasswordAccepted(config),
        queuePassword: (row, password) => queueScimPassword({ scope, queue: deps.queue, config }, row, password),
      },
    },
    idle: async () => {
      // A create's plan is submitted once its insert settles: wait until neither has work left.
      do {
        await inserts.idle();
        await plans.idle();
        await new Promise((resolve) => setImmediate(resolve));
      } while (inserts.backlog() + plans.backlog() > 0);
    },
    sweep,
  };
}

/**
 * What `worker` runs for SCIM: one endpoint on TRAINSYNC_SCIM_PORT serving every
 * organisation with a SCIM token under `/scim/v2/<slug>` (the `default` organisation also
 * under `/scim/v2`, as before organisations), and per organisation the group commit of its
 * changes and the sweep that plans Users left pending (an employee busy with earlier jobs,
 * a crash between the write and the plan). Off (undefined) unless some organisation has a
 * token (OrgSettings.scimToken; for `default`, TRAINSYNC_SCIM_TOKEN or TRAINSYNC_SCIM_TOKEN_FILE).
 */
export async function startScimService(deps: ScimServiceDeps): Promise<ScimService | undefined> {
  const { config, log } = deps;
  const served = config.orgs.filter((o): o is OrgSettings & { scimToken: Buffer } => o.scimToken !== undefined);
  if (served.length === 0) {
    log.debug('SCIM endpoint off: no organisation has a SCIM token (TRAINSYNC_SCIM_TOKEN, TRAINSYNC_SCIM_TOKEN_FILE or scimToken in TRAINSYNC_ORGS_FILE)');
    return undefined;
  }
  const orgs = served.map((org) => startOrgScim(deps, org));
  const server = await startScimServer({
    port: config.TRAINSYNC_SCIM_PORT,
    host: config.TRAINSYNC_SCIM_HOST,
    orgs: new Map(orgs.map((o) => [o.slug, o.route])),
    bareOrg: orgs.some((o) => o.slug === DEFAULT_ORG) ? DEFAULT_ORG : undefined,
    maxBodyBytes: config.TRAINSYNC_SCIM_MAX_BODY_BYTES,
    maxInFlight: config.TRAINSYNC_SCIM_MAX_IN_FLIGHT,
    log,
    onAnswered: deps.onAnswered,
  });

  let sweeping: Promise<void> | undefined;
  // One organisation's failing sweep does not stop the others'.
  const sweepAll = async (): Promise<void> => {
    for (const org of orgs) {
      await org.sweep().catch((error: unknown) =>
        log.warn({ err: error, org: org.slug }, `SCIM sweep failed (${errorMessage(error)}); tried again in ${config.TRAINSYNC_SCIM_SWEEP_MS} ms`),
      );
    }
  };
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = sweepAll().finally(() => (sweeping = undefined));
  }, config.TRAINSYNC_SCIM_SWEEP_MS);
  timer.unref();

  return {
    port: server.port,
    orgs: orgs.map((o) => o.slug),
    idle: async () => {
      await Promise.all(orgs.map((o) => o.idle()));
    },
    async close() {
      await server.close();
      clearInterval(timer);
      await sweeping;
      await Promise.all(orgs.map((o) => o.idle()));
    },
  };
}
