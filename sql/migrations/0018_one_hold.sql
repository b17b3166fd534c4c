-- One guarded path for every provisioning change (src/provisioning/pipeline): an HR feed,
-- a SCIM batch and a drift repair (`reconcile --fix`) are planned, guarded, held, audited
-- and enqueued by the same steps. This migration gives them one hold and one audit shape.

-- Held plans: every held change, whichever source made it. `source` says which; a SCIM
-- burst or a repair has no feed file, so `feed_hash` may be null (the check still holds a
-- feed's hash to sha256 hex). Why it was held, in numbers: the rows the source read, the
-- organisation's active employees, and `disables` (how many would lose access).
-- Rows of before this migration are feeds' (the only source that held whole plans).
alter table trainsync.held_plans add column source text not null default 'feed';
alter table trainsync.held_plans add constraint held_plans_source_check check (source in ('feed', 'scim', 'reconcile'));
alter table trainsync.held_plans alter column feed_hash drop not null;
alter table trainsync.held_plans add column rows_read integer;
alter table trainsync.held_plans add column active_employees integer;
-- What the person who decided said (`trainsync held --reject ID --reason TEXT`).
alter table trainsync.held_plans add column decided_note text;

-- A SCIM burst is one held plan: the guard adds the deactivations it holds to the
-- organisation's open one, so at most one is open per organisation.
create unique index held_plans_open_scim_key on trainsync.held_plans (org) where source = 'scim' and status = 'held';

-- The audit trail says which source planned each action and why. Rows of before this
-- migration: a SCIM action carried the mark 'via SCIM', a feed's its sha256, a repair none
-- (a password change is no source's: it stays null).
alter table trainsync.provisioning_actions add column source text;
alter table trainsync.provisioning_actions add constraint provisioning_actions_source_check check (source in ('feed', 'scim', 'reconcile'));
alter table trainsync.provisioning_actions add column reason text;
update trainsync.provisioning_actions
   set source = case when feed_hash = 'via SCIM' then 'scim' when feed_hash is null then 'reconcile' else 'feed' end
 where kind <> 'set-password';

-- The deactivations the SCIM guard held (trainsync.scim_held_actions, 0010) become held
-- plans. Those still held: one plan per organisation, as the guard now holds a burst, with
-- each person's disable as it would have been planned (its id from the applied version).
insert into trainsync.held_plans (org, source, feed_hash, file, mode, reason, message, actions, people, disables, feed, status, rows_read, active_employees, created_at)
select h.org, 'scim', null, 'SCIM', 'delta', 'max-disable',
       (array_agg(h.reason order by h.id desc))[1],
       jsonb_agg(jsonb_build_object(
         'id', 'disable:' || h.employee_id || ':v' || coalesce(i.version, 0),
         'kind', 'disable', 'employeeId', h.employee_id, 'email', lower(h.email),
         'platformUserId', i.platform_user_id, 'seq', 0, 'baseVersion', coalesce(i.version, 0),
         'before', jsonb_build_object('active', true), 'after', jsonb_build_object('active', false)) order by h.id),
       jsonb_agg(jsonb_build_object('employeeId', h.employee_id, 'email', lower(h.email), 'kinds', jsonb_build_array('disable'),
         'ref', h.scim_id, 'department', e.attributes ->> 'department') order by h.id),
       count(*)::int,
       '{"rows": [], "keepEmployeeIds": [], "keepEmails": []}'::jsonb,
       'held', count(*)::int,
       (select count(*)::int from trainsync.identities a where a.org = h.org and a.active),
       min(h.held_at)
  from trainsync.scim_held_actions h
  left join trainsync.identities i on i.org = h.org and i.employee_id = h.employee_id
  left join training.employees e on e.org = h.org and e.employee_id = h.employee_id
 where h.status = 'held'
 group by h.org;

-- Those decided (released, dropped, superseded) are history: each its own decided plan.
insert into trainsync.held_plans (org, source, feed_hash, file, mode, reason, message, actions, people, disables, feed, status, decided_by, decided_role, decided_at, rows_read, created_at)
select h.org, 'scim', null, 'SCIM', 'delta', 'max-disable', h.reason,
       jsonb_build_array(jsonb_build_object(
         'id', 'disable:' || h.employee_id || ':v0', 'kind', 'disable', 'employeeId', h.employee_id, 'email', lower(h.email),
         'platformUserId', null, 'seq', 0, 'baseVersion', 0,
         'before', jsonb_build_object('active', true), 'after', jsonb_build_object('active', false))),
       jsonb_build_array(jsonb_build_object('employeeId', h.employee_id, 'email', lower(h.email), 'kinds', jsonb_build_array('disable'), 'ref', h.scim_id)),
       1,
       '{"rows": [], "keepEmployeeIds": [], "keepEmails": []}'::jsonb,
       case h.status when 'released' then 'approved' when 'dropped' then 'rejected' else 'superseded' end,
       case when h.status = 'superseded' then null else 'trainsync scim held' end,
       case when h.status = 'superseded' then null else 'cli' end,
       coalesce(h.decided_at, h.held_at), 1, h.held_at
  from trainsync.scim_held_actions h
 where h.status <> 'held'
 order by h.id;

drop table trainsync.scim_held_actions;
