import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import type { ReconciliationReport } from './reconciliation.ts';

const utcMinute = (at: Date): string => `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/**
 * How old the platform's side is: when its user list was read, what trainsync changed after,
 * and the leavers it shows with access that trainsync has disabled since (counted as repaired).
 * Said by `reconcile`, `reconcile --fix` and the console's People and Drift repair pages alike.
 */
export function describePlatformListAge(report: Pick<ReconciliationReport, 'platformList' | 'org'>): string | undefined {
  const { readAt, changesSince, repairedSince } = report.platformList;
  if (readAt === null) return undefined;
  const flag = report.org === DEFAULT_ORG ? '' : ` --org ${report.org}`;
  const changes = changesSince === 0 ? 'trainsync has applied no change since' : `trainsync has applied ${changesSince} change${changesSince === 1 ? '' : 's'} since, which it does not show (\`trainsync sync users${flag}\` reads it again)`;
  const repaired = repairedSince === 0 ? '' : `; ${repairedSince} leaver${repairedSince === 1 ? '' : 's'} it shows with access ${repairedSince === 1 ? 'was' : 'were'} disabled by trainsync since: counted as repaired, not as leaver_with_access`;
  return `Platform user list read ${utcMinute(readAt)} (the last users sync, training.users); ${changes}${repaired}.`;
}

