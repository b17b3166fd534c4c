import { sql } from 'kysely';
import type { OrgDb } from '../warehouse/scope.ts';

/** Lower-case group GUID → the group's name, as the last groups sync read it (training.groups). */
export type GroupNames = ReadonlyMap<string, string>;

export const NO_GROUP_NAMES: GroupNames = new Map();

/**
 * One organisation's group names, for people reading plans and the audit trail (JSON keeps
 * the GUID). A group no longer listed keeps its last name: a removal still reads well.
 */
export async function loadGroupNames({ db, org }: OrgDb): Promise<GroupNames> {
  const { rows } = await sql<{ group_id: string; name: string }>`
    select group_id::text as group_id, name from training.groups where org = ${org}`.execute(db);
  return new Map(rows.map((r) => [r.group_id.toLowerCase(), r.name]));
}

/** The group's name when the warehouse knows it, else its GUID (a groups sync has not seen it yet). */
export function groupLabel(groupId: string, names: GroupNames): string {
  return names.get(groupId.toLowerCase()) ?? groupId;
}
