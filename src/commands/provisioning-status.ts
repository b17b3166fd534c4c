import { actionsNeedingAttention } from '../provisioning/apply/actions-store.ts';
import type { StatusSection } from './status.ts';

/** `status` section: one organisation's provisioning actions that failed or wait for an identity, newest first. */
export const provisioningAttentionSection: StatusSection = async (app, org) => {
  const rows = await actionsNeedingAttention(app.scopes.scope(org).db, org);
  return {
    title: 'Provisioning actions needing attention (see trainsync.provisioning_audit)',
    rows: rows.map((r) => ({
      action: r.actionId,
      employee: r.employeeId,
      email: r.email,
      status: r.status,
      code: r.errorCode ?? '',
      attempts: r.attempts,
      updated: r.updatedAt,
      message: r.errorMessage ?? '',
    })),
  };
};
