import { unfinishedWindowsOf } from '../../sync/sync-state.ts';
import { sectionOfOne, type SectionRows, type StatusSection } from './status-report.ts';

const TITLE = 'Unfinished windows (the next `sync` of their resource reads them again)';

/** `status` section: the windows an incomplete run of each organisation left for its next run to read again, of every windowed resource (one statement for all). */
export const unfinishedWindowsAcross: StatusSection = async (db, orgs) => {
  const windows = await unfinishedWindowsOf(db, orgs);
  const sections = new Map<string, SectionRows>(orgs.map((org) => [org, { title: TITLE, rows: [] }]));
  for (const w of windows) sections.get(w.org)?.rows.push({ resource: w.resource, window: w.key, reason: w.reason, run: w.runId ?? '', recorded: w.recordedAt });
  return sections;
};

/** The section of one organisation. */
export const unfinishedWindowsSection = sectionOfOne(unfinishedWindowsAcross);
