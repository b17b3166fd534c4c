import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SimulatorState } from '../../src/simulator/index.ts';

/** One HR-feed row as the tests write it (CSV columns of the contract). */
export interface HrRow {
  employee_id: string;
  email: string;
  first_name: string;
  last_name: string;
  status: string;
  groups: string[];
  role: string;
  organisation_identifier: string;
  platform_user_id?: string;
}

const COLUMNS = ['employee_id', 'email', 'first_name', 'last_name', 'status', 'groups', 'role', 'organisation_identifier', 'platform_user_id'] as const;

/** The organisation as its HR system would export it: everyone, with their current access and groups. */
export function rowsFromState(state: SimulatorState): HrRow[] {
  return state.users.map((u) => ({
    employee_id: u.organisationIdentifier!,
    email: u.email,
    first_name: u.firstName,
    last_name: u.lastName,
    status: u.hasAccess ? 'active' : 'inactive',
    groups: state.groups.filter((g) => g.memberIds.has(u.id)).map((g) => g.id).sort(),
    role: u.role,
    organisation_identifier: u.organisationIdentifier!,
  }));
}

function cell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

export function toCsv(rows: readonly HrRow[], options: { bom?: boolean; crlf?: boolean } = {}): string {
  const eol = options.crlf ? '\r\n' : '\n';
  const lines = [COLUMNS.join(',')];
  for (const r of rows) lines.push(COLUMNS.map((c) => cell(c === 'groups' ? r.groups.join(';') : (r[c] ?? ''))).join(','));
  return `${options.bom ? '\uFEFF' : ''}${lines.join(eol)}${eol}`;
}

/** A temp directory for feed files, removed by `cleanup`. */
export function feedDir(): { write(name: string, text: string): string; cleanup(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-feed-'));
  return {
    write(name, text) {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      return file;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Every user's access, by id: to check that nothing changed. */
export function accessSnapshot(state: SimulatorState): Record<string, boolean> {
  return Object.fromEntries(state.users.map((u) => [u.id, u.hasAccess]));
}
