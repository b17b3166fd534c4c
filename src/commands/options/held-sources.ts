import type { HeldSources } from '../../provisioning/held-sources.ts';
import { heldFeed } from '../../provisioning/pipeline/sources/feed.ts';
import { heldRepair } from '../../provisioning/pipeline/sources/snapshot.ts';
import { heldScimBurst } from '../../scim/held.ts';

/**
 * Every source whose plans can be held, registered by kind for deciding them
 * (src/provisioning/approve-held-plan.ts): the one place that names them all, so the
 * pipeline names none and SCIM's adapter stays in src/scim.
 */
export const heldSources: HeldSources = { feed: heldFeed, reconcile: heldRepair, scim: heldScimBurst };
