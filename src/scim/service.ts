import { randomUUID } from 'node:crypto';
import { DEFAULT_ORG, type OrgSettings } from '../lib/orgs-file.ts';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { errorMessage } from '../lib/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { PlatformClient } from '../platform/types.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { tryAdvisoryLock } from '../warehouse/advisory-lock.ts';
import { orgScoped } from '../queue/org-scope.ts';
import type { Database } from '../warehouse/database.ts';
import type { PgLender } from '../warehouse/transaction.ts';
import type { AdvisoryLocks } from '../warehouse/lock-session.ts';
import { fillNewAccounts } from './accounts.ts';
import { planUsers } from './batch.ts';
import type { ChangeDeps } from './change.ts';
import { createBatcher } from './batcher.ts';
import { startScimServer, type ScimOrgRoute } from './server.ts';
import { resolveDeferredIds } from './resolve-ids.ts';
import type { ScimError } from './errors.ts';
import { employeeIdFor, insertUsers, pendingUsers, type NewUser, type ScimUserRow } from './store.ts';
import type { ScimUserResource } from './user-mapping.ts';
import { checkPasswordAccepted, queueScimPassword } from './password.ts';

/** What planning one organisation's SCIM changes needs (the pipeline's deps and the SCIM disable limit). */
export function scimChangeDeps(deps: Pick<ScimServiceDeps, 'config' | 'db' | 'withPgClient' | 'locks' | 'queue' | 'platform' | 'log'>, org: string): ChangeDeps {
  const { config } = deps;
  return {
    org,
    db: deps.db,
    withPgClient: deps.withPgClient,
    locks: deps.locks,
    queue: deps.queue,
    log: deps.log,
    platform: () => deps.platform(org),
    drift: { freshnessMinutes: config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, accessRemoved: config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
    scimMaxDisable: config.TRAINSYNC_SCIM_MAX_DISABLE,
  };
}

/** A batch item: a User to plan, inserted first when it is new. */
interface Intake {
  scimId: string;
  create?: NewUser;
}

export interface ScimServiceDeps {
  config: Config;
  db: Kysely<Database>;
  withPgClient: PgLender;
  /** The process's advisory locks. */
  locks: AdvisoryLocks;
  queue: JobQueue;
  /** An organisation's platform client (built on first use): only the resolve pass of deferred ids and drift reads call it. */
  platform: (org: string) => PlatformClient;
  log: Logger;
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

/** Users planned per batch at most. */
const MAX_BATCH = 500;
/** How often a worker looks for deferred ids anyway (creates another worker queued). */
const RESOLVE_EVERY_MS = 60_000;
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
  const changeDeps = scimChangeDeps({ ...deps, log }, org.slug);
  // Users submitted and not yet planned: the sweep leaves them to the batch they wait for.
  const inFlight = new Map<string, number>();
  // Set when creates were queued without their id lookup (and at start, and once a minute, for other workers' creates).
  // Generations, not a flag: a batch that queues creates while a pass runs makes another pass due.
  let deferredGeneration = 1;
  let resolvedGeneration = 0;
  let lastResolve = Date.now();
  // One batch: the new Users' rows in one insert, then every User's snapshot, plan, audit and jobs.
  const batcher = createBatcher<Intake, ScimUserRow | ScimError | undefined>(
    async (items) => {
      const inserted = await insertUsers(deps.db, org.slug, items.flatMap((i) => (i.create ? [i.create] : [])));
      const plannable = items.filter((i) => !i.create || !isError(inserted.get(i.scimId)));
      const outcome = await planUsers(changeDeps, plannable.map((i) => i.scimId));
      if (outcome.deferredCreates > 0) deferredGeneration += 1;
      return items.map((i) => (i.create ? inserted.get(i.scimId) : undefined));
    },
    (item) => item.scimId,
    MAX_BATCH,
  );
  const submitIntake = async (item: Intake): Promise<ScimUserRow | ScimError | undefined> => {
    const { scimId } = item;
    inFlight.set(scimId, (inFlight.get(scimId) ?? 0) + 1);
    try {
      return await batcher.submit(item);
    } finally {
      const left = inFlight.get(scimId)! - 1;
      if (left === 0) inFlight.delete(scimId);
      else inFlight.set(scimId, left);
    }
  };
  const submit = async (scimId: string): Promise<void> => {
    await submitIntake({ scimId });
  };
  const create = async (user: ScimUserResource): Promise<ScimUserRow> => {
    const scimId = randomUUID();
    const answer = await submitIntake({ scimId, create: { scimId, employeeId: await employeeIdFor(deps.db, org.slug, user, scimId), user } });
    if (answer === undefined || isError(answer)) throw answer ?? new Error(`SCIM create ${scimId}: the batch returned no row`);
    return answer;
  };
  const sweep = async (): Promise<void> => {
    const rows = await pendingUsers(deps.db, org.slug, config.TRAINSYNC_SCIM_SWEEP_MS, MAX_BATCH);
    await Promise.all(rows.filter((r) => !inFlight.has(r.scim_id)).map((r) => submit(r.scim_id)));
    const periodic = Date.now() - lastResolve > RESOLVE_EVERY_MS;
    if (deferredGeneration > resolvedGeneration || periodic) {
      lastResolve = Date.now();
      const generation = deferredGeneration;
      const pass = await tryAdvisoryLock(deps.locks, orgScoped(org.slug, RESOLVE_LOCK), () =>
        resolveDeferredIds({ org: org.slug, db: deps.db, platform: deps.platform(org.slug), log }),
      );
      // Queued creates still to run: tried again at the next sweep.
      if (pass.acquired && (pass.value.ran ? !pass.value.createsQueued : pass.value.reason === 'none')) resolvedGeneration = Math.max(resolvedGeneration, generation);
      // Ids just learned (or learned meanwhile by a later action's own lookup) reach the employee rows.
      if (periodic || (pass.acquired && pass.value.ran && pass.value.found > 0)) await fillNewAccounts(deps.withPgClient, org.slug);
    }
  };
  return {
    slug: org.slug,
    route: {
      token: org.scimToken,
      context: {
        org: org.slug, db: deps.db, withPgClient: deps.withPgClient, submit, create,
        checkPassword: () => checkPasswordAccepted(config),
        queuePassword: (row, password) => queueScimPassword({ org: org.slug, db: deps.db, queue: deps.queue, config }, row, password),
      },
    },
    idle: () => batcher.idle(),
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
