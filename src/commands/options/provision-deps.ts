import type { App } from '../../runtime/app.ts';
import type { ProvisionDeps } from '../../provisioning/pipeline/types.ts';

/** The narrow parts of an app a provisioning run of one organisation takes (its own platform client). */
export function provisionDeps(app: App, org: string): ProvisionDeps {
  const scope = app.scopes.scope(org);
  return {
    org,
    db: scope.db,
    queue: app.queue,
    log: app.log,
    platform: app.platform(org),
    withPgClient: scope.lend,
    locks: app.locks,
    drift: { freshnessMinutes: app.config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, accessRemoved: app.config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
  };
}
