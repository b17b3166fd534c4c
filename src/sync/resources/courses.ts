import { COURSES } from '../../platform/listings.ts';
import type { Course } from '../../platform/schemas.ts';
import type { SnapshotResource } from './resource.ts';

/** Courses and their categories: a full snapshot each run; vanished courses get removed_at. */
export const courses: SnapshotResource<Course> = {
  name: 'courses',
  kind: 'snapshot',
  cron: '0 2 * * *',
  endpoint: COURSES,
  table: {
    table: 'training.courses',
    key: ['course_id'],
    columns: [
      ['name', 'text'],
      ['pass_rate', 'smallint'],
    ],
    row: (c) => ({ course_id: c.id, name: c.name, pass_rate: c.passRate }),
    children: [
      {
        // Replaced with each listing; a change of categories alone counts as updated.
        kind: 'set',
        table: 'training.course_categories',
        columns: [
          ['category_type', 'text'],
          ['category_name', 'text'],
        ],
        key: ['category_type', 'category_name'],
        rows: (c) => c.categories.map((cat) => ({ course_id: c.id, category_type: cat.type, category_name: cat.name })),
      },
    ],
  },
};
