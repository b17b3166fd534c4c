/**
 * The provisioning wing's entry: what the other wings (SCIM, a source of the pipeline; the
 * console) may use of it. Another wing imports the provisioning wing through this file only
 * (.dependency-cruiser.mjs, docs/architecture.md "The rules"); the commands and jobs/ may
 * reach further in.
 */

/** The pipeline, and what a source is (SCIM's adapter, src/scim/source.ts, is one). */
export { runPipeline, type Approving } from './pipeline/run-pipeline.ts';
export { pipelineDeps, type PipelineDeps, type ProvisionDeps, type Source } from './pipeline/types.ts';
/** The rows a source states, and the plan it gets. */
export type { FeedAttributes, FeedRow } from './feed/types.ts';
export type { MaxDisable, Plan, PlanRefusal } from './plan/types.ts';
/** Held plans: listing them, and deciding one through the registry of held sources. */
export { getHeldPlan, listHeldPlans, type HeldPlan, type HeldPlanSummary } from './held-plans.ts';
export { heldRefs, type HeldDecisionDeps, type HeldSource } from './held-sources.ts';
export { approveHeldPlan, rejectHeldPlan } from './approve-held-plan.ts';
/** Identities (trainsync.identities): the accounts trainsync applied. */
export { countIdentities, employeesWithoutAccountSql, findIdentityByEmail, identitiesOf, identityGroupsSql, learnPlatformUserId } from './apply/identities-store.ts';
/** The HR snapshot (training.employees): SCIM's Users are snapshotted through it, and their new accounts filled in. */
export { fillNewAccounts, snapshotEmployees } from './employees-store.ts';
/** Actions (the audit trail) and enqueuing them. */
export { countNeedingAttention, countOpenCreates, lastOpenAction, markCreatesResolved, searchActionRows, unresolvedCreates, type ActionListRow } from './apply/actions-store.ts';
export { jobIdForAction } from './apply/actions.ts';
export { liveOpenActions } from './apply/enqueue.ts';
export { queuePasswordChange } from './apply/password-request.ts';
/** Feeds read (trainsync.feeds). */
export { recentFeedRows, type FeedListRow } from './apply/feeds-store.ts';
/** HR against the platform (training.hr_reconciliation): the console's People pages. */
export { RECONCILIATION_KINDS, reconciliationReport, type ReconciliationReport } from './reconciliation.ts';
export { describePlatformListAge } from './platform-list-age.ts';
export type { HrReconciliationView, ReconciliationKind } from './employee-tables.ts';
/** Group names, drift repair and retrying a failed action (the console's buttons). */
export { loadGroupNames, NO_GROUP_NAMES, type GroupNames } from './group-names.ts';
export { reconcileFix } from './reconcile-fix.ts';
export { retryFailedAction } from './retry-action.ts';
