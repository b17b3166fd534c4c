import { basename, resolve } from 'node:path';
import { refreshEmployeeAccounts, type EmployeeSnapshotCounts } from './employees-store.ts';
import { waitForActions, type ApplyResult } from './apply/enqueue.ts';
import { feedFormatFor, readFeed } from './feed/read.ts';
import { feedDataRows } from './feed/shrink-guard.ts';
import type { Confirmation } from './pipeline/guards.ts';
import type { ShrinkCheck } from './pipeline/shrink.ts';
import type { ColumnMap, FeedFormat, FeedReadResult, ReadFeedOptions } from './feed/types.ts';
import { runPipeline } from './pipeline/run-pipeline.ts';
import type { SeatsInfo } from './pipeline/seats.ts';
import { feedSource } from './pipeline/sources/feed.ts';
import { pipelineDeps, type ProvisionDeps } from './pipeline/types.ts';
import type { MaxDisable, Plan, PlanMode } from './plan/types.ts';

export interface ProvisionOptions {
  file: string;
  format?: FeedFormat | undefined;
  map?: ColumnMap | undefined;
  /** The rest of a profile's reading (delimiter, encoding, status words, leaver rule, attributes). */
  reading?: Omit<ReadFeedOptions, 'format' | 'map'> | undefined;
  mode: PlanMode;
  dryRun: boolean;
  maxDisable?: MaxDisable | undefined;
  /** `--force`: past the seat limit; past the disable limit only with `confirm`. */
  force: boolean;
  /** `--confirm N`: the disables the person accepts (with `force`). */
  confirm?: Confirmation | undefined;
  /** `--allow-shrink`: a full feed shorter than the share is planned (the disable limit still stands). */
  allowShrink?: boolean | undefined;
  /** Called once the plan is known, before anything is enqueued (the CLI prints it). */
  onPlan?: (result: ProvisionResult) => void;
  onProgress?: (finished: number, total: number, byKind: ReadonlyMap<string, { done: number; total: number }>) => void;
  /** The feed, already read from `file` with these options (the command reads it first, to guard it). */
  feed?: FeedReadResult | undefined;
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
  /** The plan the disable limit held, for a person to review (`trainsync held`, the console). */
  heldPlanId?: number;
  /** The feed-shrink guard refused the feed (plan.refused says so too): nothing was planned. */
  shrink?: ShrinkCheck;
}

/**
 * What `trainsync provision` does, as a function: reads the feed, then runs it through the
 * provisioning pipeline (pipeline/run-pipeline.ts: adoption on a first run, the plan
 * against the applied state, the platform and the free seats, the guards, the feed's
 * record, and unless it is a dry run or held or refused, the enqueue and the feed's
 * snapshot into training.employees), and waits for the actions. Nothing is enqueued, no
 * identity written and no employee changed when the file cannot be read, a full feed is
 * far shorter than the workforce (the feed-shrink guard), or a limit is exceeded without
 * `force` (and past the disable limit, without the typed count).
 */
export async function provisionFeed(deps: ProvisionDeps, options: ProvisionOptions): Promise<ProvisionResult> {
  const format = options.format ?? feedFormatFor(options.file);
  const feed = options.feed ?? (await readFeed(options.file, { ...options.reading, format, ...(options.map ? { map: options.map } : {}) }));
  const source = feedSource(deps, {
    hash: feed.hash,
    file: basename(options.file),
    mode: options.mode,
    rows: feed.rows,
    invalidEmployeeIds: feed.invalidEmployeeIds,
    invalidEmails: feed.invalidEmails,
    fileErrors: feed.fileErrors,
    maxDisable: options.maxDisable,
    dataRows: feedDataRows(feed),
    record: { path: resolve(options.file), format, rowErrors: feed.errors.length },
  });
  const toResult = (run: { plan: Plan; adopted: number; adoptionNote?: string; seats: SeatsInfo; platformRequests: number; heldPlanId?: number; shrink?: ShrinkCheck }): ProvisionResult => ({
    feed,
    plan: run.plan,
    adopted: run.adopted,
    seats: run.seats,
    platformRequests: run.platformRequests,
    ...(run.adoptionNote ? { adoptionNote: run.adoptionNote } : {}),
    ...(run.heldPlanId === undefined ? {} : { heldPlanId: run.heldPlanId }),
    ...(run.shrink === undefined ? {} : { shrink: run.shrink }),
  });
  const onPlan = options.onPlan;
  // The lock covers planning and enqueuing only: the wait below may be long.
  const run = await runPipeline(pipelineDeps(deps), source, {
    dryRun: options.dryRun,
    force: options.force,
    confirm: options.confirm,
    allowShrink: options.allowShrink,
    ...(onPlan ? { onPlan: (planned: Parameters<typeof toResult>[0]) => onPlan(toResult(planned)) } : {}),
  });
  const planned = toResult(run);
  if (run.enqueued === undefined) return planned;
  const audit = await waitForActions(deps, [...run.enqueued.enqueued, ...run.enqueued.waitingOn], options.onProgress);
  // Accounts created or adopted by this run are known now: give them to their employees.
  if (run.after?.employees) await refreshEmployeeAccounts(deps.scope).catch((error: unknown) => deps.log.warn({ err: error }, 'employee accounts not refreshed'));
  return { ...planned, ...run.after, applied: { ...run.enqueued, audit } };
}
