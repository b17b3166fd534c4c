import { RESULTS } from '../sync/results/plan.ts';
import { listUnfinishedWindows } from '../sync/sync-state.ts';
import type { StatusSection } from './status.ts';

/** `status` section: result windows an incomplete run of the organisation left for its next run to read again. */
export const unfinishedWindowsSection: StatusSection = async (app, org) => {
  const windows = await listUnfinishedWindows(app.scopes.scope(org).db, org, RESULTS);
  return {
    title: 'Unfinished result windows (the next `sync results` reads them again)',
    rows: windows.map((w) => ({ window: w.key, reason: w.reason, run: w.runId ?? '', recorded: w.recordedAt })),
  };
};
