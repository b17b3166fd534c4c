-- Groups and the courses they assign (vendor GET groups), and the memberships trainsync
-- knows of (the platform offers no read of memberships). Public contract: see
-- ARCHITECTURE.md "Warehouse tables". Views reading these live in sql/views.

create table training.groups (
  group_id      uuid primary key,
  name          text not null,
  first_seen_at timestamptz not null,
  -- Updated on every listing that shows the group; markMissingGroups compares it.
  last_seen_at  timestamptz not null,
  removed_at    timestamptz,
  -- When the name or the set of courses last changed (or the group came back).
  updated_at    timestamptz not null
);

-- Replaced with each listing of its group. No foreign key to courses: a group may
-- name a course the courses listing has not shown yet (or no longer shows).
create table training.group_courses (
  group_id    uuid not null references training.groups (group_id) on delete cascade,
  course_id   uuid not null,
  -- The course's name as the group listing gave it: labels the assignment even
  -- before (or after) the courses listing shows the course.
  course_name text,
  primary key (group_id, course_id)
);

create index group_courses_course_id_idx on training.group_courses (course_id);

-- Memberships trainsync applied (each add-to-group / remove-from-group job records its
-- outcome here, in the transaction that records the identity's groups). A removal
-- keeps the row and sets removed_at; an add clears it. No foreign key to groups or
-- employees: a membership can be applied before either listing shows its side.
create table training.group_members (
  group_id    uuid not null,
  user_id     uuid not null,
  -- The HR key of the employee trainsync applied the membership for.
  employee_id text not null,
  -- When this membership (last) started.
  since       timestamptz not null,
  removed_at  timestamptz,
  primary key (group_id, user_id)
);

create index group_members_user_id_idx on training.group_members (user_id) where removed_at is null;
create index group_members_employee_id_idx on training.group_members (employee_id);

-- Memberships applied before this migration: trainsync.identities holds each
-- employee's applied groups; their start is unknown, so the identity's last change.
insert into training.group_members (group_id, user_id, employee_id, since)
select g.group_id, i.platform_user_id, i.employee_id, i.updated_at
from trainsync.identities i
cross join lateral unnest(i.groups) as g(group_id)
where i.platform_user_id is not null
on conflict do nothing;

-- Explicit, in case the migrating role is not the one whose default privileges 0001 set.
grant select on training.groups, training.group_courses, training.group_members to trainsync_reader;
