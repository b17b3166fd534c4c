/**
 * Writes a large HR feed (CSV, the columns of examples/hr-feed.csv) in batches, so the
 * writer itself never holds the file. Used by the `feed` bench scenario.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

const guid = (n: number): string => `${n.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
export const FEED_GROUPS = Array.from({ length: 40 }, (_, i) => guid(i + 1));
const FIRST = ['Quinn', 'Wen', 'Ben', 'Kofi', 'Aoife', 'Sam', 'Priya', 'Lars', 'Maria', 'José'];
const LAST = ['Brown', "O'Neill", 'Murphy', 'Walsh', 'Nguyen', 'Kowalski', 'García', 'Smith', 'Okafor', 'Silva'];
const DEPARTMENTS = ['Engineering', 'People', 'Operations', 'Sales', 'Finance'];
const LOCATIONS = ['Dublin', 'Cork', 'Lisbon', 'Berlin'];

export const FEED_HEADER = 'employee_id,email,first_name,last_name,status,groups,role,organisation_identifier,department,location';

/** Row `i` (0-based) of the generated feed; every 97th employee is inactive. */
export function feedLine(i: number): string {
  const id = `E${String(i + 1).padStart(7, '0')}`;
  const first = FIRST[i % FIRST.length]!;
  const last = LAST[(i * 7) % LAST.length]!;
  // E-mail addresses are ASCII: the accents of a name are dropped, as HR systems do.
  const ascii = (name: string): string => name.normalize('NFD').toLowerCase().replace(/[^a-z]/g, '');
  const email = `${ascii(first)}.${ascii(last)}${i + 1}@acme-training.example`;
  const groups = [...new Set([FEED_GROUPS[i % 40]!, FEED_GROUPS[(i * 7) % 40]!])].sort().join(';');
  const status = i % 97 === 0 ? 'inactive' : 'active';
  return `${id},${email},${first},${last},${status},${groups},${i % 50 === 0 ? 'ADMIN' : 'USER'},${id},${DEPARTMENTS[i % 5]},${LOCATIONS[i % 4]}`;
}

export async function writeFeedFile(file: string, rows: number): Promise<void> {
  const out = createWriteStream(file);
  let batch = `${FEED_HEADER}\n`;
  for (let i = 0; i < rows; i += 1) {
    batch += `${feedLine(i)}\n`;
    if (batch.length > 65_536) {
      if (!out.write(batch)) await once(out, 'drain');
      batch = '';
    }
  }
  out.end(batch);
  await once(out, 'finish');
}

if (process.argv[2] !== undefined && process.argv[1]?.endsWith('feed-file.ts')) {
  await writeFeedFile(process.argv[2], Number(process.argv[3] ?? 300_000));
}
