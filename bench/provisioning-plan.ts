/**
 * Reading and planning a 50,000-employee HR feed against 50,000 applied employees with
 * 2% changes (joiners, leavers, inactive, returners, movers, renames).
 * Run: npx tsx bench/provisioning-plan.ts
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { readFeed } from '../src/provisioning/feed/read.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import type { AppliedEmployee } from '../src/provisioning/plan/types.ts';

const EMPLOYEES = 50_000;

const guid = (n: number): string => `${n.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const GROUPS = Array.from({ length: 40 }, (_, i) => guid(i + 1));

export interface ProvisioningPlanBench {
  employees: number;
  readMs: number;
  planMs: number;
  peakRssMb: number;
  actions: number;
  rowErrors: number;
  /** RSS after building the fixture, before reading: the part of the peak that is not the reader's. */
  rssBeforeMb: number;
}

export async function benchProvisioningPlan(): Promise<ProvisioningPlanBench> {
  const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-bench-plan-'));
  try {
    const file = path.join(dir, 'hr.csv');
    const applied: AppliedEmployee[] = [];
    // Written in batches, so the fixture itself does not inflate the peak RSS being measured.
    const out = createWriteStream(file);
    let batch = 'employee_id,email,first_name,last_name,status,groups,role,organisation_identifier\r\n';
    for (let i = 0; i < EMPLOYEES; i += 1) {
      const id = `E${String(i).padStart(6, '0')}`;
      const groups = [GROUPS[i % 40]!, GROUPS[(i * 7) % 40]!].filter((g, k, all) => all.indexOf(g) === k).sort();
      // 2% of employees change; the change depends on i mod 500 (10 of every 500).
      const change = i % 500;
      if (change !== 0) {
        applied.push({
          employeeId: id, email: `${id.toLowerCase()}@example.com`, platformUserId: guid(100_000 + i),
          firstName: 'First', lastName: `Last ${i}`, active: change !== 2, groups: change === 3 ? [GROUPS[39]!] : groups,
          role: 'USER', organisationIdentifier: id, version: 1 + (i % 9),
        });
      }
      if (change === 1) continue; // leaver: missing from the feed
      const status = change === 4 || change === 5 ? 'terminated' : 'active';
      const last = change === 6 ? `"Renamed, ${i}"` : `Last ${i}`;
      batch += `${id},${id.toLowerCase()}@example.com,First,${last},${status},${groups.join(';')},USER,${id}\r\n`;
      if (batch.length > 65_536) {
        if (!out.write(batch)) await once(out, 'drain');
        batch = '';
      }
    }
    out.end(batch);
    await once(out, 'finish');

    const rssBeforeMb = Math.round(process.memoryUsage().rss / 1048576);
    const t0 = performance.now();
    const feed = await readFeed(file);
    const t1 = performance.now();
    const plan = planProvisioning({ ...feed, applied, mode: 'full', options: { force: false }, file: 'hr.csv' });
    const t2 = performance.now();
    if (plan.refused !== undefined) throw new Error(`bench plan refused: ${plan.refused.message}`);
    return {
      employees: EMPLOYEES,
      readMs: Math.round(t1 - t0),
      planMs: Math.round(t2 - t1),
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      actions: plan.actions.length,
      rowErrors: feed.errors.length + plan.errors.length,
      rssBeforeMb,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await benchProvisioningPlan();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
