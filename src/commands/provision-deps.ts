import type { App } from '../runtime/app.ts';
import type { ProvisionDeps } from '../provisioning/provision-feed.ts';

/** The narrow parts of an app a provisioning run takes. */
export function provisionDeps(app: App): ProvisionDeps {
  return {
    db: app.db,
    queue: app.queue,
    log: app.log,
    platform: app.platform(),
    withPgClient: app.withPgClient,
    drift: { freshnessMinutes: app.config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, accessRemoved: app.config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
  };
}
