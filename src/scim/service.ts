import { randomUUID } from 'node:crypto';
import { DEFAULT_ORG } from '../lib/orgs-file.ts';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { errorMessage } from '../lib/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { PlatformClient } from '../platform/types.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { tryAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { Database } from '../warehouse/database.ts';
import type { PgLender } from '../warehouse/transaction.ts';
import { fillNewAccounts } from './accounts.ts';
import { planUsers } from './batch.ts';
import { createBatcher } from './batcher.ts';
import { startScimServer } from './server.ts';
import { resolveDeferredIds } from './resolve-ids.ts';
import type { ScimError } from './errors.ts';
import { employeeIdFor, insertUsers, pendingUsers, type NewUser, type ScimUserRow } from './store.ts';
import type { ScimUserResource } from './user-mapping.ts';

/** A batch item: a User to plan, inserted first when it is new. */
interface Intake {
  scimId: string;
  create?: NewUser;
}

export interface ScimServiceDeps {
  config: Config;
  db: Kysely<Database>;
  withPgClient: PgLender;
  queue: JobQueue;
  /** The platform client (built on first use): only the resolve pass of deferred ids calls it. */
  platform: () => PlatformClient;
  log: Logger;
}

export interface ScimService {
  port: number;
  /** Resolves once every change submitted so far is planned (tests, shutdown). */
  idle(): Promise<void>;
  /** Stops taking requests (those in flight finish), then the sweep. */
  close(): Promise<void>;
}

/** Users planned per batch at most. */
const MAX_BATCH = 500;
/** How often a worker looks for deferred ids anyway (creates another worker queued). */
const RESOLVE_EVERY_MS = 60_000;
/** One resolve pass at a time, across workers. */
const RESOLVE_LOCK = 'trainsync:scim-resolve-ids';

/**
 * What `worker` runs for SCIM: the endpoint on TRAINSYNC_SCIM_PORT, the group commit of
 * its changes, and the sweep that plans Users left pending (an employee busy with
 * earlier jobs, a crash between the write and the plan). Off (undefined) unless a token
 * is configured (TRAINSYNC_SCIM_TOKEN or TRAINSYNC_SCIM_TOKEN_FILE).
 */
const isError = (value: unknown): value is ScimError => value instanceof Error;

export async function startScimService(deps: ScimServiceDeps): Promise<ScimService | undefined> {
  const { config, log } = deps;
  const token = config.TRAINSYNC_SCIM_TOKEN ?? config.TRAINSYNC_SCIM_TOKEN_FILE;
  if (token === undefined) {
    log.debug('SCIM endpoint off: neither TRAINSYNC_SCIM_TOKEN nor TRAINSYNC_SCIM_TOKEN_FILE is set');
    return undefined;
  }
  const changeDeps = { org: DEFAULT_ORG, db: deps.db, withPgClient: deps.withPgClient, queue: deps.queue, log, config, platform: deps.platform };
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
      const inserted = await insertUsers(deps.db, items.flatMap((i) => (i.create ? [i.create] : [])));
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
    const answer = await submitIntake({ scimId, create: { scimId, employeeId: await employeeIdFor(deps.db, user, scimId), user } });
    if (answer === undefined || isError(answer)) throw answer ?? new Error(`SCIM create ${scimId}: the batch returned no row`);
    return answer;
  };
  const server = await startScimServer({
    port: config.TRAINSYNC_SCIM_PORT,
    host: config.TRAINSYNC_SCIM_HOST,
    token,
    maxBodyBytes: config.TRAINSYNC_SCIM_MAX_BODY_BYTES,
    context: { db: deps.db, withPgClient: deps.withPgClient, submit, create },
    log,
  });

  let sweeping: Promise<void> | undefined;
  const sweep = async (): Promise<void> => {
    const rows = await pendingUsers(deps.db, config.TRAINSYNC_SCIM_SWEEP_MS, MAX_BATCH);
    await Promise.all(rows.filter((r) => !inFlight.has(r.scim_id)).map((r) => submit(r.scim_id)));
    const periodic = Date.now() - lastResolve > RESOLVE_EVERY_MS;
    if (deferredGeneration > resolvedGeneration || periodic) {
      lastResolve = Date.now();
      const generation = deferredGeneration;
      const pass = await tryAdvisoryLock(deps.withPgClient, RESOLVE_LOCK, () => resolveDeferredIds({ db: deps.db, platform: deps.platform(), log }));
      // Queued creates still to run: tried again at the next sweep.
      if (pass.acquired && (pass.value.ran ? !pass.value.createsQueued : pass.value.reason === 'none')) resolvedGeneration = Math.max(resolvedGeneration, generation);
      // Ids just learned (or learned meanwhile by a later action's own lookup) reach the employee rows.
      if (periodic || (pass.acquired && pass.value.ran && pass.value.found > 0)) await fillNewAccounts(deps.withPgClient);
    }
  };
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = sweep()
      .catch((error: unknown) => log.warn({ err: error }, `SCIM sweep failed (${errorMessage(error)}); tried again in ${config.TRAINSYNC_SCIM_SWEEP_MS} ms`))
      .finally(() => (sweeping = undefined));
  }, config.TRAINSYNC_SCIM_SWEEP_MS);
  timer.unref();

  return {
    port: server.port,
    idle: () => batcher.idle(),
    async close() {
      await server.close();
      clearInterval(timer);
      await sweeping;
      await batcher.idle();
    },
  };
}
