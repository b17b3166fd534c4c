import { quarantinedUsersOf } from '../../scim/store.ts';
import { sectionOfOne, type SectionRows, type StatusSection } from './status-report.ts';

const TITLE = 'SCIM Users quarantined (answered 2xx, change not planned; a new PUT or PATCH of the User plans it again)';
/** Per organisation, newest first; the count in the title covers them all. */
const SHOWN = 50;

/**
 * `status` section: each organisation's quarantined SCIM Users (sql/migrations/0022_scim_quarantine.sql),
 * newest first, one statement for all. docs/scim.md says what an operator does with one.
 */
export const scimQuarantineAcross: StatusSection = async (db, orgs) => {
  const { rows, counts } = await quarantinedUsersOf(db, orgs, SHOWN);
  const sections = new Map<string, SectionRows>(orgs.map((org) => [org, { title: TITLE, rows: [] }]));
  for (const org of orgs) {
    const n = counts.get(org) ?? 0;
    if (n > SHOWN) sections.get(org)!.title = `${TITLE}: ${n}, the newest ${SHOWN} shown`;
  }
  for (const r of rows) {
    sections.get(r.org)?.rows.push({
      id: r.scim_id,
      userName: r.user_name,
      employee: r.employee_id,
      deleted: r.deleted ? 'yes' : 'no',
      since: r.quarantined_at,
      reason: r.reason,
    });
  }
  return sections;
};

/** The section of one organisation. */
export const scimQuarantineSection = sectionOfOne(scimQuarantineAcross);
