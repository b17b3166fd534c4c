import { sql } from 'kysely';
import { RESULTS } from '../sync/results/plan.ts';
import { sectionOfOne, type SectionRows, type StatusSection } from './status-report.ts';

const TITLE = 'Unfinished result windows (the next `sync results` reads them again)';

/** `status` section: result windows an incomplete run of each organisation left for its next run to read again (one statement for all). */
export const unfinishedWindowsAcross: StatusSection = async (db, orgs) => {
  const { rows } = await sql<{ org: string; window_key: string; reason: string; run_id: number | null; recorded_at: Date }>`
    select org, window_key, reason, run_id, recorded_at from trainsync.unfinished_windows
    where org = any(${[...orgs]}::text[]) and resource = ${RESULTS} order by org, window_key`.execute(db);
  const sections = new Map<string, SectionRows>(orgs.map((org) => [org, { title: TITLE, rows: [] }]));
  for (const w of rows) sections.get(w.org)?.rows.push({ window: w.window_key, reason: w.reason, run: w.run_id ?? '', recorded: w.recorded_at });
  return sections;
};

/** The section of one organisation. */
export const unfinishedWindowsSection = sectionOfOne(unfinishedWindowsAcross);
