import type { App } from '../../runtime/app.ts';
import type { ProvisionDeps } from '../../provisioning/pipeline/types.ts';
import { shrinkSettingOf } from '../../provisioning/pipeline/shrink.ts';

/** The narrow parts of an app a provisioning run of one organisation takes (its own platform client). */
export function provisionDeps(app: App, org: string): ProvisionDeps {
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
  };
}
