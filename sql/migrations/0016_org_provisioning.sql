-- Several organisations (issue 20), the provisioning wing: identities, the audit trail,
-- feeds, held plans, employees and their history, and SCIM are per organisation.
-- Every table gains `org` (the slug, training.organisations); the rows a single-
-- organisation warehouse holds are `default`'s (no row lost). Keys take org FIRST:
-- an employee id, an e-mail and a platform user id are unique only within one
-- organisation (two HR systems reuse ids; a person in two organisations is one
-- platform account, listed by both, with its access and groups per organisation).

-- training.assignment_status groups by the employees' primary key (a functional dependency),
-- which changes below: dropped here, it is created again, per organisation, by the views
-- that every migrate applies after the migrations (sql/views/60_assignment_status.sql).
drop view if exists training.assignment_status;

-- trainsync.identities: the applied state per (org, employee). The same person in two
-- organisations is two rows (one per organisation's feed), possibly the same platform
-- account: so e-mail and platform user id are unique per organisation only.
alter table trainsync.identities add column org text not null default 'default';
alter table trainsync.identities alter column org drop default;
alter table trainsync.identities add constraint identities_org_fkey foreign key (org) references training.organisations (slug);
alter table trainsync.identities drop constraint identities_pkey;
alter table trainsync.identities add primary key (org, employee_id);
drop index trainsync.identities_email_key;
create unique index identities_email_key on trainsync.identities (org, lower(email));
drop index trainsync.identities_platform_user_id_key;
create unique index identities_platform_user_id_key on trainsync.identities (org, platform_user_id)
  where platform_user_id is not null;

-- trainsync.feeds: each feed read, by the organisation it was read for.
alter table trainsync.feeds add column org text not null default 'default';
alter table trainsync.feeds alter column org drop default;
alter table trainsync.feeds add constraint feeds_org_fkey foreign key (org) references training.organisations (slug);
drop index trainsync.feeds_hash_idx;
create index feeds_hash_idx on trainsync.feeds (org, hash);

-- trainsync.provisioning_actions: action ids are deterministic from the employee id
-- or the e-mail (`disable:E1:v3`, `create-user:a@x`), so two organisations make the
-- same ids: unique per organisation. (The BullMQ job id is scoped the same way.)
alter table trainsync.provisioning_actions add column org text not null default 'default';
alter table trainsync.provisioning_actions alter column org drop default;
alter table trainsync.provisioning_actions add constraint provisioning_actions_org_fkey foreign key (org) references training.organisations (slug);
alter table trainsync.provisioning_actions drop constraint provisioning_actions_action_id_key;
alter table trainsync.provisioning_actions add constraint provisioning_actions_action_id_key unique (org, action_id);
drop index trainsync.provisioning_actions_employee_idx;
create index provisioning_actions_employee_idx on trainsync.provisioning_actions (org, employee_id, created_at);
drop index trainsync.provisioning_actions_feed_hash_idx;
create index provisioning_actions_feed_hash_idx on trainsync.provisioning_actions (org, feed_hash);
drop index trainsync.provisioning_actions_attention_idx;
create index provisioning_actions_attention_idx on trainsync.provisioning_actions (org, status, updated_at)
  where status in ('failed', 'needs-identity');
-- The SCIM guard counts an organisation's disables of the last hour.
create index provisioning_actions_disables_idx on trainsync.provisioning_actions (org, created_at)
  where kind = 'disable';
-- provisioning_actions_updated_idx (0012, the console's newest-first list) stays: the
-- console may list every organisation's actions together.

-- trainsync.held_plans (0012): a plan the disable guard refused is one organisation's
-- feed against that organisation's applied state; a newer held plan or an applied feed
-- supersedes only that organisation's. (console_sessions and console_audit belong to
-- the console wing, 0017.)
alter table trainsync.held_plans add column org text not null default 'default';
alter table trainsync.held_plans alter column org drop default;
alter table trainsync.held_plans add constraint held_plans_org_fkey foreign key (org) references training.organisations (slug);
drop index trainsync.held_plans_status_idx;
create index held_plans_status_idx on trainsync.held_plans (org, status, created_at desc);

-- training.employees and their history (0005): one row per (org, employee): each HR feed
-- is one organisation's, and two organisations' HR systems may use the same employee id.
alter table training.employees add column org text not null default 'default';
alter table training.employees alter column org drop default;
alter table training.employees add constraint employees_org_fkey foreign key (org) references training.organisations (slug);
alter table training.employees drop constraint employees_pkey;
alter table training.employees add primary key (org, employee_id);
drop index training.employees_email_idx;
create index employees_email_idx on training.employees (org, email);
drop index training.employees_user_id_idx;
create index employees_user_id_idx on training.employees (org, user_id);

alter table training.employee_history add column org text not null default 'default';
alter table training.employee_history alter column org drop default;
alter table training.employee_history add constraint employee_history_org_fkey foreign key (org) references training.organisations (slug);
alter table training.employee_history drop constraint employee_history_pkey;
alter table training.employee_history add primary key (org, employee_id, valid_from);
drop index training.employee_history_current_idx;
create unique index employee_history_current_idx on training.employee_history (org, employee_id) where valid_to is null;

-- SCIM (0010): a path and a token per organisation. scim_id stays the primary key: trainsync
-- mints it (a random UUID), so it never repeats across organisations, and every lookup also
-- filters org (a token of one organisation never reaches another's Users). userName and the
-- employee id are unique per organisation: the same person may be a User of two organisations.
alter table trainsync.scim_users add column org text not null default 'default';
alter table trainsync.scim_users alter column org drop default;
alter table trainsync.scim_users add constraint scim_users_org_fkey foreign key (org) references training.organisations (slug);
drop index trainsync.scim_users_user_name_key;
create unique index scim_users_user_name_key on trainsync.scim_users (org, lower(user_name)) where deleted_at is null;
drop index trainsync.scim_users_employee_id_key;
create unique index scim_users_employee_id_key on trainsync.scim_users (org, employee_id) where deleted_at is null;
drop index trainsync.scim_users_external_id_idx;
create index scim_users_external_id_idx on trainsync.scim_users (org, external_id);
drop index trainsync.scim_users_pending_idx;
create index scim_users_pending_idx on trainsync.scim_users (org, updated_at) where pending;

-- A SCIM Group is a platform group GUID, and two organisations' platforms may list the same GUID.
alter table trainsync.scim_groups add column org text not null default 'default';
alter table trainsync.scim_groups alter column org drop default;
alter table trainsync.scim_groups add constraint scim_groups_org_fkey foreign key (org) references training.organisations (slug);
alter table trainsync.scim_groups drop constraint scim_groups_pkey;
alter table trainsync.scim_groups add primary key (org, group_id);

alter table trainsync.scim_held_actions add column org text not null default 'default';
alter table trainsync.scim_held_actions alter column org drop default;
alter table trainsync.scim_held_actions add constraint scim_held_actions_org_fkey foreign key (org) references training.organisations (slug);
drop index trainsync.scim_held_actions_open_key;
create unique index scim_held_actions_open_key on trainsync.scim_held_actions (org, employee_id) where status = 'held';
