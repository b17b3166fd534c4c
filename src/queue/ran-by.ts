import type { Config } from '../config.ts';
import type { OrgSettings } from '../settings/orgs-file.ts';
import type { JobOutcome } from './wait-for-jobs.ts';
import { WORKER_NAME } from './worker.ts';
import { fingerprintOf, settingsDifferences, type SettingsFingerprint } from './worker-settings.ts';

/** Jobs of one organisation that another process (a `trainsync worker`) ran, and how its settings compare. */
export interface RanElsewhere {
  worker: string;
  org: string;
  jobIds: string[];
  /** What differs from this process's settings; empty when nothing does; undefined when the worker published none. */
  differences: string[] | undefined;
}

/**
 * Which of `outcomes` another process ran, grouped by worker and organisation, each with
 * the differences between that worker's published settings and this process's own. A
 * command reports a result as its own only when there are none.
 */
export async function ranElsewhere(
  queue: { workerSettings(workerName: string, org: string): Promise<SettingsFingerprint | undefined> },
  config: Pick<Config, 'DATABASE_URL'>,
  outcomes: ReadonlyArray<JobOutcome & { org: string }>,
  orgOf: (slug: string) => Pick<OrgSettings, 'apiUrl' | 'apiKey'>,
): Promise<RanElsewhere[]> {
  const groups = new Map<string, RanElsewhere>();
  for (const outcome of outcomes) {
    const worker = outcome.processedBy;
    if (worker === undefined || worker === WORKER_NAME) continue;
    const id = `${worker}\n${outcome.org}`;
    const group = groups.get(id) ?? { worker, org: outcome.org, jobIds: [], differences: undefined };
    group.jobIds.push(outcome.jobId);
    groups.set(id, group);
  }
  for (const group of groups.values()) {
    const published = await queue.workerSettings(group.worker, group.org);
    const mine = fingerprintOf(config, orgOf(group.org));
    group.differences = published && mine ? settingsDifferences(published, mine) : undefined;
  }
  return [...groups.values()];
}
