import type { Selectable } from 'kysely';
import type { IdentitiesTable } from './tables.ts';
import type { AppliedEmployee } from '../plan/types.ts';
import { allIdentities } from './identities-store.ts';
import type { OrgDb } from '../../warehouse/scope.ts';

/** One `trainsync.identities` row as the planner's applied state. */
export function toAppliedEmployee(row: Selectable<IdentitiesTable>): AppliedEmployee {
  return {
    employeeId: row.employee_id,
    email: row.email,
    platformUserId: row.platform_user_id,
    firstName: row.first_name,
    lastName: row.last_name,
    active: row.active,
    groups: row.groups,
    role: row.role,
    organisationIdentifier: row.organisation_identifier,
    version: row.version,
  };
}

/** Every employee's last applied state in one organisation, for `planProvisioning`. */
export async function loadAppliedEmployees(scope: OrgDb): Promise<AppliedEmployee[]> {
  return (await allIdentities(scope)).map(toAppliedEmployee);
}
