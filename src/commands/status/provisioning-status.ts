import { attentionActionsOf } from '../../provisioning/apply/actions-store.ts';
import { sectionOfOne, type SectionRows, type StatusSection } from './status-report.ts';

const TITLE = 'Provisioning actions needing attention (see trainsync.provisioning_audit)';
/** Per organisation, newest first (the audit view has them all). */
const SHOWN = 50;

/** `status` section: each organisation's provisioning actions that failed or wait for an identity, newest first (one statement for all). */
export const provisioningAttentionAcross: StatusSection = async (db, orgs) => {
  const rows = await attentionActionsOf(db, orgs, SHOWN);
  const sections = new Map<string, SectionRows>(orgs.map((org) => [org, { title: TITLE, rows: [] }]));
  for (const r of rows) {
    sections.get(r.org)?.rows.push({
      action: r.action_id,
      employee: r.employee_id,
      email: r.email,
      status: r.status,
      code: r.error_code ?? '',
      attempts: r.attempts,
      updated: r.updated_at,
      message: r.error_message ?? '',
    });
  }
  return sections;
};

/** The section of one organisation. */
export const provisioningAttentionSection = sectionOfOne(provisioningAttentionAcross);
