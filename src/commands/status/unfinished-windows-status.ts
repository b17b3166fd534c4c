import { RESULTS } from '../../sync/results/plan.ts';
import { unfinishedWindowsOf } from '../../sync/sync-state.ts';
import { sectionOfOne, type SectionRows, type StatusSection } from './status-report.ts';

const TITLE = 'Unfinished result windows (the next `sync results` reads them again)';

/** `status` section: result windows an incomplete run of each organisation left for its next run to read again (one statement for all). */
export const unfinishedWindowsAcross: StatusSection = async (db, orgs) => {
  const windows = await unfinishedWindowsOf(db, orgs, RESULTS);
  const sections = new Map<string, SectionRows>(orgs.map((org) => [org, { title: TITLE, rows: [] }]));
  for (const w of windows) sections.get(w.org)?.rows.push({ window: w.key, reason: w.reason, run: w.runId ?? '', recorded: w.recordedAt });
  return sections;
};

/** The section of one organisation. */
export const unfinishedWindowsSection = sectionOfOne(unfinishedWindowsAcross);
