import type { HeldPlan } from './held-plans.ts';
import type { Approving } from './pipeline/run-pipeline.ts';
import type { ProvisionDeps, SourceKind } from './pipeline/types.ts';
import type { PlanRefusal } from './plan/types.ts';

/**
 * The registry of sources whose plans can be held: deciding a held plan
 * (approve-held-plan.ts) asks the plan's source, by its kind, what approving and rejecting
 * mean for it, so the pipeline names no source. Each source declares its entry beside
 * itself (a feed's and a repair's in pipeline/sources/, a SCIM burst's in src/scim); the
 * app's composition registers them all (src/commands/options/held-sources.ts), and a kind
 * without an entry does not type-check.
 */

/** What planning a held plan's source again did. */
export type HeldApproval =
  | {
      applied: true;
      enqueued: string[];
      /** Actions enqueued behind others still queued. */
      waitingOn: string[];
      /** Employees left pending (earlier actions still queued). */
      pending: string[];
      /** The feed's employee snapshot failed after the enqueue (the actions stand). */
      snapshotError?: string | undefined;
    }
  | { applied: false; refused: PlanRefusal | undefined };

/** A source, as a person's decision of one of its held plans reaches it (under the provisioning lock). */
export interface HeldSource {
  /** Plans the held input again, with the reviewed people let through the disable guard once. */
  approve(deps: ProvisionDeps, plan: HeldPlan, approving: Approving): Promise<HeldApproval>;
  /** The plan was rejected (nothing is enqueued for it): what the source takes back; the employees left pending. */
  reject(deps: ProvisionDeps, plan: HeldPlan): Promise<{ pending: string[] }>;
}

export type HeldSources = Readonly<Record<SourceKind, HeldSource>>;

/** What deciding a held plan takes: a provisioning run's parts and the registered sources. */
export interface HeldDecisionDeps extends ProvisionDeps {
  heldSources: HeldSources;
}

/** The source's own keys of a held plan's people (a SCIM User's id): what approving reads again. */
export const heldRefs = (plan: HeldPlan): string[] => plan.people.flatMap((p) => (p.ref ? [p.ref] : []));
