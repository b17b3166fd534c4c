import type { App } from '../../runtime/app.ts';
import type { HeldDecisionDeps } from '../../provisioning/held-sources.ts';
import { shrinkSettingOf } from '../../provisioning/pipeline/shrink.ts';
import { heldSources } from './held-sources.ts';

/** The narrow parts of an app a provisioning run of one organisation takes (its own platform client), and the held sources to decide its held plans. */
export function provisionDeps(app: App, org: string): HeldDecisionDeps {
  const scope = app.scopes.scope(org);
  const settings = app.config.orgs.find((o) => o.slug === org);
  return {
    scope,
    queue: app.queue,
    log: app.log,
    platform: app.platform(org),
    locks: app.locks,
    drift: { freshnessMinutes: app.config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, accessRemoved: app.config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
    // The feed-shrink guard's share, for every source that states the whole workforce (a full feed, the snapshot).
    shrink: shrinkSettingOf(settings ?? { slug: org }, app.config.TRAINSYNC_ORGS_FILE !== undefined),
    heldSources,
  };
}
