-- SCIM 2.0 (src/scim): what identity providers pushed, and the deactivations the guard
-- holds. Operational (schema trainsync), not for BI: the employees themselves are in
-- training.employees, written through the same snapshot as a feed's rows.

-- One row per SCIM user: the resource as the identity provider last stated it, and the
-- employee it maps to. `scim_id` is minted by trainsync at creation and never changes
-- (renames, e-mail changes and re-keys keep it): it is the SCIM `id`.
create table trainsync.scim_users (
  scim_id     uuid primary key,
  -- externalId, else the enterprise extension's employeeNumber, else 'scim-' || scim_id.
  employee_id text not null,
  -- userName (the e-mail), as given; unique case-insensitively.
  user_name   text not null,
  external_id text,
  active      boolean not null,
  -- The resource as returned by GET (id and meta added on the way out).
  resource    jsonb not null,
  -- Platform groups (GUIDs) the identity provider put this user in.
  groups      uuid[] not null default '{}',
  -- True until the change is planned and its jobs queued (or found to need none); the
  -- SCIM sweep plans rows left true (an employee busy with earlier jobs, a crash).
  pending     boolean not null default true,
  -- Bumped when the resource changes: meta.version (W/"<version>").
  version     integer not null default 1,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  -- DELETE /Users/{id}: the account is disabled (never deleted on the platform) and the
  -- SCIM user is gone (404); the employee stays, and a later POST may bring them back.
  deleted_at  timestamptz
);

create unique index scim_users_user_name_key on trainsync.scim_users (lower(user_name)) where deleted_at is null;
create unique index scim_users_employee_id_key on trainsync.scim_users (employee_id) where deleted_at is null;
create index scim_users_external_id_idx on trainsync.scim_users (external_id);
create index scim_users_pending_idx on trainsync.scim_users (updated_at) where pending;

-- Groups an identity provider mapped (POST /Groups): the SCIM id is the platform group
-- GUID itself; the platform cannot create groups, so only existing ones map.
create table trainsync.scim_groups (
  group_id     uuid primary key,
  display_name text not null,
  external_id  text,
  created_at   timestamptz not null default now()
);

-- Deactivations the guard held: more disables via SCIM within a sliding hour than the
-- feed's disable threshold allows. `trainsync scim held` releases or drops them.
create table trainsync.scim_held_actions (
  id          bigserial primary key,
  employee_id text not null,
  scim_id     uuid not null,
  email       text not null,
  kind        text not null check (kind in ('disable')),
  status      text not null default 'held' check (status in ('held', 'released', 'dropped', 'superseded')),
  -- Why it was held: the count and the threshold at the time.
  reason      text not null,
  held_at     timestamptz not null default now(),
  decided_at  timestamptz
);

-- At most one held deactivation per employee; a retry of the same one changes nothing.
create unique index scim_held_actions_open_key on trainsync.scim_held_actions (employee_id) where status = 'held';
