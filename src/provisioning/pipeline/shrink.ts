import { DEFAULT_FEED_MIN_SHARE } from '../../settings/feed-min-share.ts';
import { countKnownActive } from '../apply/identities-store.ts';
import { decideFeedShrink, type ShrinkDecision } from '../feed/shrink-guard.ts';
import { noActions } from '../plan/plan.ts';
import { ACTION_KINDS, type ActionKind, type Plan } from '../plan/types.ts';
import type { DesiredState, PipelineDeps, ShrinkSetting, Source } from './types.ts';

/**
 * The feed-shrink step of the pipeline: a statement of the whole workforce (a full feed, the
 * last snapshot) far shorter than the active employees trainsync knows is refused before
 * anything is planned or read from the platform, whichever command or job brought it
 * (`provision`, `reconcile --fix` and its schedule, the console's repair). The rule is
 * feed/shrink-guard.ts's (pure); this counts the active employees and builds the refused,
 * empty plan. A source that states nobody's absence (a delta feed, SCIM: each deactivation
 * is stated one by one and meets the sliding-hour disable limit) has no `listed` count and
 * is not checked here.
 */

export type { ShrinkSetting };

export const DEFAULT_SHRINK_SETTING: ShrinkSetting = { percent: DEFAULT_FEED_MIN_SHARE, setting: 'TRAINSYNC_FEED_MIN_SHARE' };

/** An organisation's share as its settings give it (the orgs file's `feedMinShare`, else the variable). */
export function shrinkSettingOf(org: { slug: string; feedMinShare?: number | undefined }, orgsFile: boolean): ShrinkSetting {
  return { percent: org.feedMinShare ?? DEFAULT_FEED_MIN_SHARE, setting: orgsFile ? `feedMinShare of ${org.slug}` : 'TRAINSYNC_FEED_MIN_SHARE' };
}

/** What the step found: the decision and the counts it was taken on. */
export interface ShrinkCheck {
  decision: ShrinkDecision;
  /** Rows of the statement (a feed's data rows, valid or rejected; the snapshot's listed employees). */
  dataRows: number;
  activeEmployees: number;
  minSharePercent: number;
}

/** Decides the shrink guard for a source's desired state; undefined when it does not apply (not a whole statement, unreadable, allowed). */
export async function shrinkStep(
  deps: Pick<PipelineDeps, 'scope' | 'shrink'>,
  source: Pick<Source<unknown>, 'kind'>,
  desired: Pick<DesiredState, 'listed' | 'fileErrors' | 'mode'>,
  allowShrink: boolean,
): Promise<ShrinkCheck | undefined> {
  // A feed with file errors is the planner's to refuse, naming them.
  if (desired.listed === undefined || desired.fileErrors.length > 0 || allowShrink) return undefined;
  const share = deps.shrink ?? DEFAULT_SHRINK_SETTING;
  const activeEmployees = await countKnownActive(deps.scope);
  const decision = decideFeedShrink({
    // A snapshot plans as a delta, but its removed employees are leavers by absence: the statement is a whole one.
    mode: 'full',
    dataRows: desired.listed,
    activeEmployees,
    minSharePercent: share.percent,
    allowShrink,
    shareSetting: share.setting,
    subject: source.kind === 'reconcile' ? 'snapshot' : 'feed',
  });
  return { decision, dataRows: desired.listed, activeEmployees, minSharePercent: share.percent };
}

/** The plan of a statement the shrink guard refused: no action, the refusal. */
export function shrinkRefusedPlan(desired: Pick<DesiredState, 'mode'>, check: ShrinkCheck): Plan {
  const refused = check.decision.refused ? { reason: check.decision.reason, message: check.decision.message } : undefined;
  return { ...emptyPlan(desired.mode, check.activeEmployees, 'platform state not read: the statement was refused before planning'), ...(refused ? { refused } : {}) };
}

/** A plan of nothing, made without reading the platform (`platform` says why). */
export function emptyPlan(mode: DesiredState['mode'], activeCount: number, platform: string): Plan {
  const counts = Object.fromEntries(ACTION_KINDS.map((k) => [k, 0])) as Record<ActionKind, number>;
  return { mode, ...noActions(), counts, unsupported: [], errors: [], notes: [], activeCount, maxDisable: 0, unchanged: 0, repairs: 0, drift: [], platform };
}
