import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { guid } from '../src/platform/schemas.ts';
import { createJobCatalog } from '../src/queue/catalog.ts';
import { scheduleTable } from '../src/queue/schedulers.ts';
import { removeCourse, updateCourse } from '../src/simulator/index.ts';
import { syncJob } from '../src/sync/resource-job.ts';
import type { SnapshotResource } from '../src/sync/resources/resource.ts';
import { syncJobName, syncResources } from '../src/sync/catalog-resources.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * A resource declared in this file alone drives the whole path: the catalog's job and
 * schedule, the generic listing over real HTTP against the simulator, and the generic
 * loader into a table of its own in a real Postgres (as trainsync_app, under the
 * organisation's row security), with removals marked.
 */

const labelSchema = z.looseObject({ id: guid, name: z.string(), passRate: z.number().int().nullable() });
type Label = z.output<typeof labelSchema>;

const courseLabels: SnapshotResource<Label> = {
  name: 'course-labels',
  kind: 'snapshot',
  cron: '15 4 * * *',
  endpoint: { resource: 'course-labels', path: 'courses', paging: 'count', schema: labelSchema },
  table: {
    table: 'training.test_course_labels',
    key: ['course_id'],
    columns: [
      ['label', 'text'],
      ['pass_rate', 'smallint'],
    ],
    row: (c) => ({ course_id: c.id, label: c.name.toUpperCase(), pass_rate: c.passRate }),
  },
};

// What a migration would hold; the app role's grants and policies come from the view file
// applied after every migration, run again here for this table.
const DDL = `
  create table training.test_course_labels (
    org text not null, course_id uuid not null, label text not null, pass_rate smallint,
    first_seen_at timestamptz not null, last_seen_at timestamptz not null, removed_at timestamptz, updated_at timestamptz not null,
    primary key (org, course_id)
  )`;

describe('a resource declared once drives the generic listing and loader end to end', () => {
  let h: SyncHarness;

  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { seed: 5, sizes: { courses: 14, users: 10, results: 10 } }, jobs: [...allJobs, syncJob(courseLabels)] });
    await h.database.pool.query(DDL);
    await h.database.pool.query(await readFile(new URL('../sql/views/95_trainsync_app.sql', import.meta.url), 'utf8'));
  });
  afterAll(async () => {
    await h?.close();
  });

  const stored = async (): Promise<Array<{ id: string; label: string; pass_rate: number | null; removed: boolean }>> =>
    (
      await h.database.pool.query<{ id: string; label: string; pass_rate: number | null; removed: boolean }>(
        `select course_id::text as id, label, pass_rate, removed_at is not null as removed from training.test_course_labels where org = 'default' order by course_id::text`,
      )
    ).rows;

  it('the catalog derives its job, its place in `sync all` and its schedule from the declaration', () => {
    const jobs = [...allJobs, syncJob(courseLabels)];
    // `sync all` runs the catalog's list in order: the new declaration after every existing one, whatever they are.
    expect(syncResources(jobs)).toEqual([...syncResources(allJobs), 'course-labels']);
    expect(syncJobName(jobs, 'course-labels')).toBe('sync-course-labels');
    const catalog = createJobCatalog(jobs);
    expect(scheduleTable(catalog, loadConfig({}))).toContainEqual(expect.objectContaining({ job: 'sync-course-labels', queue: 'sync', pattern: '15 4 * * *' }));
    expect(scheduleTable(catalog, loadConfig({ TRAINSYNC_CRON_COURSE_LABELS: '0 5 * * *' }))).toContainEqual(expect.objectContaining({ job: 'sync-course-labels', pattern: '0 5 * * *' }));
  });

  it('lists over HTTP, maps every record to its row, then counts a second run unchanged', async () => {
    const first = summaryOf(await h.sync(['course-labels']), 'course-labels');
    const courses = h.sim.state.courses;
    expect(first).toMatchObject({ resource: 'course-labels', status: 'succeeded', inserted: courses.length, updated: 0, unchanged: 0, removed: 0 });
    expect(h.sim.requests.filter((r) => r.path === '/api/v2/courses').length).toBeGreaterThan(0);
    const expected = courses.map((c) => ({ id: c.id, label: c.name.toUpperCase(), pass_rate: c.passRate, removed: false })).sort((a, b) => a.id.localeCompare(b.id));
    expect(await stored()).toEqual(expected);
    expect(summaryOf(await h.sync(['course-labels']), 'course-labels')).toMatchObject({ inserted: 0, updated: 0, unchanged: courses.length, removed: 0 });
  });

  it('writes a change and marks a record the listing no longer holds as removed, without deleting it', async () => {
    const [changed, gone] = h.sim.state.courses;
    updateCourse(h.sim.state, changed!.id, { name: 'Renamed course' });
    removeCourse(h.sim.state, gone!.id);
    const summary = summaryOf(await h.sync(['course-labels']), 'course-labels');
    expect(summary).toMatchObject({ inserted: 0, updated: 1, removed: 1 });
    const rows = await stored();
    expect(rows.find((r) => r.id === changed!.id)).toMatchObject({ label: 'RENAMED COURSE', removed: false });
    expect(rows.find((r) => r.id === gone!.id)).toMatchObject({ removed: true });
    // The organisation's scope held: the rows were written under the syncing organisation.
    const { rows: orgs } = await h.database.pool.query<{ org: string }>('select distinct org from training.test_course_labels');
    expect(orgs).toEqual([{ org: 'default' }]);
  });
});
