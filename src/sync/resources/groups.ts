import { groupSchema, type Group } from '../../platform/schemas.ts';
import type { SnapshotResource } from './resource.ts';

/**
 * Groups and the courses each assigns (vendor GET groups): a full snapshot each run;
 * vanished groups get removed_at (their courses are kept, as last listed). A platform
 * without the endpoint records "not available" and the job succeeds.
 */
export const groups: SnapshotResource<Group> = {
  name: 'groups',
  kind: 'snapshot',
  cron: '0 2 * * *',
  // No page size is documented: paged by number until a short page or totalEntities.
  endpoint: { resource: 'groups', path: 'groups', paging: 'count', schema: groupSchema },
  table: {
    table: 'training.groups',
    key: ['group_id'],
    columns: [['name', 'text']],
    row: (g) => ({ group_id: g.id, name: g.name }),
    children: [
      {
        // Replaced with each listing; a renamed course counts as a change of the group.
        kind: 'set',
        table: 'training.group_courses',
        columns: [
          ['course_id', 'uuid'],
          ['course_name', 'text'],
        ],
        key: ['course_id'],
        rows: (g) => g.courses.map((c) => ({ group_id: g.id, course_id: c.id, course_name: c.name })),
      },
    ],
  },
  whenNotOffered: (status) => `not available (GET groups answered ${status})`,
};
