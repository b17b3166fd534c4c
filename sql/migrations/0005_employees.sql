-- Employees as the HR feed states them (schema `training`, a public contract: see
-- ARCHITECTURE.md "Warehouse tables"), so reports can join HR attributes (department,
-- manager, location…) to training results. Written by every provisioning run that
-- applies and by `trainsync load-feed`; never by hand.

create table training.employees (
  employee_id   text primary key,
  -- Lower case: the key the feed is compared on (join to training.users on lower(email)).
  email         text not null,
  first_name    text,
  last_name     text,
  status        text not null check (status in ('active', 'inactive')),
  -- The feed's columns that are not fields, as the profile keeps them (column → value).
  attributes    jsonb not null default '{}',
  -- The platform account, when trainsync knows it (trainsync.identities), else the feed's platform_user_id.
  user_id       uuid,
  first_seen_at timestamptz not null,
  last_seen_at  timestamptz not null,
  -- Set when a full feed no longer lists the employee; cleared when one lists them again.
  removed_at    timestamptz,
  updated_at    timestamptz not null
-- Every snapshot stamps last_seen_at on every listed row: with half of each page free,
-- those updates stay on their page (HOT: no index writes), and the next one prunes them.
) with (fillfactor = 50);

create index employees_email_idx on training.employees (email);
create index employees_user_id_idx on training.employees (user_id);

-- One row per version of an employee: a row opens (valid_from) when an employee is first
-- listed or any of status, email, names or attributes changes, and closes (valid_to)
-- at the next change or when a full feed no longer lists them. valid_to is null on the
-- current row. "As of" a moment t: valid_from <= t and (valid_to is null or valid_to > t).
create table training.employee_history (
  employee_id text not null,
  valid_from  timestamptz not null,
  valid_to    timestamptz,
  status      text not null check (status in ('active', 'inactive')),
  email       text not null,
  first_name  text,
  last_name   text,
  attributes  jsonb not null default '{}',
  primary key (employee_id, valid_from),
  check (valid_to is null or valid_to > valid_from)
);

-- At most one current row per employee.
create unique index employee_history_current_idx on training.employee_history (employee_id) where valid_to is null;

-- 0001's default privileges already cover tables created by the migrating role; said
-- again here so a migration run by another role still leaves them readable.
grant select on training.employees, training.employee_history to trainsync_reader;
