import { syncReading } from './reading.ts';
import type { Resource } from './resources/resource.ts';
import { syncWindowed } from './results/sync-results.ts';
import { syncSnapshotResource } from './snapshot.ts';
import { defineSyncJob } from './sync-job.ts';

/**
 * The sync job of a resource declaration (src/sync/resources/): `sync-<name>` on the
 * sync queue, on the declaration's schedule, run by the engine of its kind.
 */
export function syncJob<T>(resource: Resource<T>): ReturnType<typeof defineSyncJob> {
  return defineSyncJob({
    resource: resource.name,
    cron: resource.cron,
    windowed: resource.kind === 'windowed',
    run: (payload, ctx) => {
      switch (resource.kind) {
        case 'snapshot':
          return syncSnapshotResource(ctx, resource);
        case 'windowed':
          return syncWindowed(resource, payload, ctx);
        case 'reading':
          return syncReading(ctx, resource);
      }
    },
  });
}
