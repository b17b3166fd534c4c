import { isNotOffered } from '../../platform/errors.ts';
import type { PlatformUser } from '../../platform/schemas.ts';
import type { PlatformClient } from '../../platform/types.ts';
import type { FeedRow } from '../feed/types.ts';
import { adoptExistingAccounts } from '../plan/adopt.ts';
import type { AppliedEmployee, PlatformView } from '../plan/types.ts';
import { readPlatformView, viewFromUsers } from '../platform-view.ts';
import { DEFAULT_DRIFT_SETTINGS, type DesiredState, type PipelineDeps, type Source } from './types.ts';

/**
 * The platform view step: the accounts as the platform shows them now, for the plan. A
 * full desired state looks at every account; a delta one at the accounts its rows touch
 * (none touched: nothing is read, as for a SCIM batch of creates). On a source's first run
 * (nothing applied yet) the listing also adopts existing accounts that match rows.
 */

export interface PlatformStep {
  view: PlatformView | undefined;
  /** Why there is no view. */
  note?: string;
  /** Requests made to the platform for it (0 when training.users was fresh). */
  requests: number;
  /** Accounts taken as identities (first run only). */
  adopted: AppliedEmployee[];
  adoptionNote?: string;
}

/** The platform ids of the applied employees the rows name. */
export function touchedAccounts(rows: readonly FeedRow[], applied: readonly AppliedEmployee[]): string[] {
  const byEmployee = new Map(applied.map((a) => [a.employeeId, a.platformUserId]));
  return [...new Set(rows.flatMap((r) => {
    const id = byEmployee.get(r.employeeId);
    return id ? [id] : [];
  }))];
}

/** Every account of the organisation, or undefined when the platform offers no GET users. */
export async function listAllUsers(platform: PlatformClient): Promise<PlatformUser[] | undefined> {
  const users: PlatformUser[] = [];
  try {
    for await (const page of platform.listUsers({})) users.push(...page.records);
  } catch (error) {
    if (isNotOffered(error)) return undefined;
    throw error;
  }
  return users;
}

export async function readPlatformStep(deps: PipelineDeps, source: Pick<Source<unknown>, 'adopt'>, desired: DesiredState, applied: readonly AppliedEmployee[]): Promise<PlatformStep> {
  if (desired.fileErrors.length > 0) return { view: undefined, note: 'the feed could not be read', requests: 0, adopted: [] };
  if (source.adopt && applied.length === 0 && desired.rows.length > 0) {
    const users = await listAllUsers(deps.platform());
    if (users === undefined) {
      return {
        view: undefined,
        note: 'the platform offers no GET users',
        requests: 1,
        adopted: [],
        adoptionNote: 'first run: the platform offers no GET users, so existing accounts could not be adopted; creates of existing e-mails adopt them one by one',
      };
    }
    const adopted = adoptExistingAccounts(desired.rows, applied, users);
    // The listing just read is the platform's state: no second read.
    return {
      view: viewFromUsers(users),
      requests: Math.max(1, Math.ceil(users.length / 50)),
      adopted,
      adoptionNote: `first run: ${adopted.length} of ${users.length} existing accounts match feed rows and are adopted as known employees`,
    };
  }
  const touchedIds = desired.mode === 'delta' ? touchedAccounts(desired.rows, applied) : undefined;
  // New employees touch no account: there is nothing to read.
  if (touchedIds !== undefined && touchedIds.length === 0) return { view: undefined, note: 'no existing account touched', requests: 0, adopted: [] };
  const drift = deps.drift ?? DEFAULT_DRIFT_SETTINGS;
  const read = await readPlatformView({ scope: deps.scope, platform: deps.platform() }, { freshnessMinutes: drift.freshnessMinutes, touchedIds });
  return { ...read, adopted: [] };
}
