import type { App } from '../runtime/app.ts';
import { soleOrg } from '../config.ts';
import type { ProvisionDeps } from '../provisioning/provision-feed.ts';

/** The narrow parts of an app a provisioning run takes. */
export function provisionDeps(app: App, org: string = soleOrg(app.config).slug): ProvisionDeps {
  return {
    org,
    db: app.db,
    queue: app.queue,
    log: app.log,
    platform: app.platform(org),
    withPgClient: app.withPgClient,
    drift: { freshnessMinutes: app.config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, accessRemoved: app.config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
  };
}
