import type { PlatformClient } from '../../platform/types.ts';
import type { ProvisioningSource } from '../apply/tables.ts';
import type { AdvisoryLocks } from '../../warehouse/lock-session.ts';
import type { ApplyDeps } from '../apply/enqueue.ts';
import type { FeedRow } from '../feed/types.ts';
import type { AccessRemovedPolicy, MaxDisable, Plan, PlanMode } from '../plan/types.ts';

/**
 * The one plan-and-apply pipeline (run-pipeline.ts) and its sources. A source turns its
 * input (an HR feed, a SCIM batch, the last snapshot, a held plan) into a desired state
 * and says how it is guarded; everything after that (lock, platform view, seats, plan,
 * guards, hold, audit, enqueue) is the pipeline's, the same for every source.
 */

export type SourceKind = ProvisioningSource;
export const SOURCE_KINDS = ['feed', 'scim', 'reconcile'] as const satisfies readonly SourceKind[];

/** How a plan treats the platform's current state (TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, TRAINSYNC_DRIFT_ACCESS_REMOVED). */
export interface DriftSettings {
  freshnessMinutes: number;
  accessRemoved: AccessRemovedPolicy;
}

/** The share a statement of the whole workforce must list (TRAINSYNC_FEED_MIN_SHARE, or the organisation's feedMinShare): pipeline/shrink.ts. */
export interface ShrinkSetting {
  percent: number;
  /** How it was set, for the message. */
  setting: string;
}

export const DEFAULT_DRIFT_SETTINGS: DriftSettings = { freshnessMinutes: 15, accessRemoved: 'restore' };

/** What a provisioning run of one organisation needs: the apply side's parts (its scope among them) and its platform client. */
export interface ProvisionDeps extends ApplyDeps {
  /** The organisation's own client (its key): the plan reads that organisation's accounts. */
  platform: PlatformClient;
  /** The process's advisory locks (the organisation's provisioning lock is taken there). */
  locks: AdvisoryLocks;
  /** Default DEFAULT_DRIFT_SETTINGS. */
  drift?: DriftSettings | undefined;
  /** The organisation's feed-shrink share; default DEFAULT_SHRINK_SETTING (TRAINSYNC_FEED_MIN_SHARE's default). */
  shrink?: ShrinkSetting | undefined;
}

/** The pipeline's deps: as ProvisionDeps, with the platform client built on first use (a SCIM batch of creates never reads the platform). */
export interface PipelineDeps extends ApplyDeps {
  platform: () => PlatformClient;
  locks: AdvisoryLocks;
  drift?: DriftSettings | undefined;
  shrink?: ShrinkSetting | undefined;
}

export function pipelineDeps(deps: ProvisionDeps): PipelineDeps {
  return { ...deps, platform: () => deps.platform };
}

/** What a source wants the platform to look like: feed-shaped rows, whatever the input was. */
export interface DesiredState {
  rows: readonly FeedRow[];
  /** full: applied employees the rows do not list are leavers; delta: only the listed are touched. */
  mode: PlanMode;
  /** Keys of rows the source rejected: never taken for leavers. */
  invalidEmployeeIds: ReadonlySet<string>;
  invalidEmails: ReadonlySet<string>;
  /** The input itself could not be read: nothing is planned (a feed's file errors). */
  fileErrors: readonly string[];
  /**
   * `all`: planned against every applied employee (a feed, the snapshot); `listed`: only
   * the identities the rows name (SCIM plans a few employees at a time).
   */
  appliedScope: 'all' | 'listed';
  /**
   * A statement of the whole workforce (a full feed, the last snapshot with leavers by
   * absence): how many people it lists, for the feed-shrink guard (pipeline/shrink.ts).
   * Undefined: the source leaves nobody out by not listing them (a delta feed, SCIM).
   */
  listed?: number | undefined;
  /** The source's own key of each row's employee (a SCIM User's id), kept with a held person so approving can read the source again. */
  refs?: ReadonlyMap<string, string> | undefined;
}

/**
 * The disable guard of a source: at most `maxDisable` disables (a count, or a percentage of
 * the organisation's active employees), counted per organisation.
 */
export interface DisableGuard {
  maxDisable: MaxDisable | undefined;
  /** How `maxDisable` was given, for the message (`--max-disable`, TRAINSYNC_SCIM_MAX_DISABLE). */
  setting: string;
  /** A sliding window (an interval, e.g. `1 hour`): this source's disables within it count too (SCIM). */
  window?: string | undefined;
  /**
   * `plan`: past the limit the whole plan is held and nothing is enqueued (a feed, a repair:
   * one statement, where a mass disable is most likely a mistake); `excess`: only the
   * disables past the limit are held, the rest applied (SCIM: changes arrive one by one).
   */
  holds: 'plan' | 'excess';
}

/** A source of desired state: see the module comment. */
export interface Source<After = undefined> {
  kind: SourceKind;
  /** The name plans, holds and audit reasons use: the feed's file name, `SCIM`, `training.employees`. */
  label: string;
  /** The audit rows' `feed_hash`: the feed's sha256, `via SCIM`, or null. */
  auditMark: string | null;
  /** Reads the desired state; called under the provisioning lock. */
  desired(): Promise<DesiredState>;
  guard: DisableGuard;
  /** Check free seats before creating (feed, repair); SCIM leaves seats to the jobs (a read per batch would cost the budget). */
  checkSeats: boolean;
  /** On the first run (nothing applied yet), existing accounts that match rows are adopted (a feed). */
  adopt: boolean;
  /** `later`: creates do not look up their id; it is learned in bulk after a burst (SCIM). */
  createLookUp: 'now' | 'later';
  /** `reconcile --fix --reassert-groups`. */
  reassertGroups?: boolean | undefined;
  /** Once the plan is guarded, before anything is held or enqueued (dry runs too): a feed records its read. */
  planned?(plan: Plan, dryRun: boolean): Promise<void>;
  /** After the enqueue, under the lock: a feed snapshots itself into training.employees, SCIM marks its changes planned. */
  afterEnqueue?(outcome: { enqueued: readonly string[]; skippedEmployees: readonly string[] }): Promise<After>;
}
