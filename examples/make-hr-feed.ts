/**
 * Writes examples/hr-feed.csv: the HR export of the simulator's seed-1 organisation
 * (the one `trainsync demo` starts), with a few changes for the demo to apply:
 * joiners, leavers (marked terminated), a returner, movers, a renamed employee and one
 * row with a bad e-mail (to show the per-row error report). Every row carries a department
 * and a location, kept as attributes (the README's "by department" query and the console's chart).
 * Run: node bin/run-ts.js examples/make-hr-feed.ts
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_SIZES, generateState, ORG_EMAIL_DOMAIN } from '../src/simulator/dataset.ts';

const state = generateState({ seed: 1, sizes: { ...DEFAULT_SIZES }, unlimitedPlan: true, usersEndpoint: true, dateBounds: 'exclusive-instant' });
const groupsOf = (userId: string): string[] => state.groups.filter((g) => g.memberIds.has(userId)).map((g) => g.id).sort();
const csv = (value: string): string => (/[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

const active = state.users.filter((u) => u.hasAccess);
const leavers = new Set([active[11]!.id, active[57]!.id, active[143]!.id]);
const returner = state.users.find((u) => !u.hasAccess && u.accountType === 'API')!;
const movers = new Set([active[20]!.id, active[90]!.id, active[200]!.id]);
const renamed = active[120]!.id;

const DEPARTMENTS = ['Operations', 'Sales', 'Engineering', 'Finance', 'People', 'Customer Care'];
const LOCATIONS = ['Dublin', 'Leeds', 'Lisbon', 'Toronto'];
/** Stable per row of the feed (the same file every time it is written). */
const placeOf = (n: number): [string, string] => [DEPARTMENTS[(n * 7 + (n % 5)) % DEPARTMENTS.length]!, LOCATIONS[(n * 3 + (n % 7)) % LOCATIONS.length]!];

const lines = ['employee_id,email,first_name,last_name,status,groups,role,organisation_identifier,department,location'];
for (const user of state.users) {
  let status = user.hasAccess ? 'active' : 'inactive';
  let groups = groupsOf(user.id);
  let lastName = user.lastName;
  if (leavers.has(user.id)) status = 'terminated';
  if (user.id === returner.id) status = 'active';
  if (movers.has(user.id)) {
    // Moves into a group the employee is not yet in (the first one missing).
    const into = state.groups.find((g) => !g.memberIds.has(user.id));
    if (into) groups = [...groups, into.id].sort();
  }
  if (user.id === renamed) lastName = `${user.lastName}-Okafor`;
  lines.push([user.organisationIdentifier!, user.email, user.firstName, lastName, status, groups.join(';'), user.role, user.organisationIdentifier!, ...placeOf(lines.length)].map(csv).join(','));
}
const joiners: Array<[string, string, number[]]> = [
  ['Ada', 'Lovelace', [0]],
  ['Grace', 'Hopper', [1, 4]],
  ['Alan', 'Turing', [1]],
  ['Katherine', 'Johnson', []],
  ['Tim', 'Berners-Lee', [2, 3]],
];
joiners.forEach(([first, last, groupIndexes], k) => {
  const id = `E${String(state.users.length + k + 1).padStart(6, '0')}`;
  const email = `${first}.${last}.${id}${ORG_EMAIL_DOMAIN}`.toLowerCase();
  const groups = groupIndexes.map((i) => state.groups[i]!.id).join(';');
  lines.push([id, email, first, last, 'active', groups, 'USER', id, ...placeOf(lines.length)].map(csv).join(','));
});
// One joiner the HR export got wrong: reported with its line and field, and left out.
lines.push(`E${String(state.users.length + joiners.length + 1).padStart(6, '0')},edsger.dijkstra-at-acme,Edsger,Dijkstra,active,,USER,,Engineering,Leeds`);

const out = fileURLToPath(new URL('./hr-feed.csv', import.meta.url));
writeFileSync(out, `${lines.join('\n')}\n`);
process.stdout.write(`wrote ${out}: ${lines.length - 1} rows\n`);
