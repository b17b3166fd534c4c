-- One row per discrepancy between the HR feed (training.employees) and the platform
-- (training.users, and the provisioning actions in schema trainsync):
--   active_without_account    active current employee with no platform account: none
--                             linked (user_id) or with the same e-mail, or the linked
--                             one is no longer listed by the platform
--   leaver_with_access        inactive or removed employee whose account still has access, unless
--                             trainsync disabled it after the users listing that shows the access
--                             (its latest access action is a disable that succeeded after the
--                             account's last_seen_at): the listing predates the repair, so it is
--                             counted as repaired, not as a discrepancy (reconcile says how many)
--   account_without_employee  platform account with access that no employee row lists
--                             (by user_id, e-mail or organisation identifier); only once
--                             a feed has been loaded
--   pending_action            the latest provisioning action of its kind for an employee
--                             failed or waits for an identity (needs-identity)
-- Per organisation: employees of org X are compared with the accounts org X's key lists
-- (training.users rows of org X) and org X's actions; org is the last column.
-- security_invoker off: the view reads schema trainsync (the actions and identities) with
-- its owner's rights, so readers need nothing in that schema (they have nothing there).
-- The owner is not bound by row-level security, so the view filters itself: it reads a
-- row only when its organisation is one training.visible_organisations() returns, a
-- function run with the reader's own rights (row-level security on training.organisations
-- shows a per-organisation reader its own row, trainsync_reader every row, trainsync's
-- application role the organisations of its transaction's scope).
--
-- security_barrier on, and that filter applied where each table is read (the CTE
-- `visible`), not once at the end. Without the barrier the planner pushes a reader's own
-- predicate (a function it wrote in pg_temp, a cast that fails with the value in its
-- message) below the filter, where it is shown other organisations' rows. Into a barrier
-- view Postgres pushes only predicates made of leakproof functions (which neither raise
-- errors about nor print their arguments); every other predicate sees the view's output
-- alone. Filtering each read early keeps the view itself from concatenating, formatting or
-- comparing another organisation's values (nothing here can raise an error today; the
-- early filter keeps it so when the view changes). test/reader-side-channels.test.ts
-- attacks every view of schema training this way.
create or replace function training.visible_organisations() returns setof text
  language sql stable
  -- A SET clause keeps the planner from inlining the body into the view, where the
  -- view owner's rights (and no row-level security) would read the table instead.
  -- pg_temp last: a reader's temporary table cannot stand in for a relation named here.
  set search_path = pg_catalog, pg_temp
as $$
  select slug from training.organisations
$$;

create or replace view training.hr_reconciliation with (security_invoker = false, security_barrier = true) as
with visible as (
  -- Once per query, with the reader's rights; every read below keeps only these organisations.
  select training.visible_organisations() as org
), employee_accounts as (
  -- Each employee's platform account: the linked one, else a listed one with the same e-mail;
  -- account_gone: the linked account is one the platform no longer lists.
  select e.org, e.employee_id, e.email, e.status, e.removed_at, e.user_id, coalesce(e.user_id, m.user_id) as account_id,
    coalesce(linked.removed_at is not null, false) as account_gone
  from training.employees e
  left join training.users linked on linked.org = e.org and linked.user_id = e.user_id
    and linked.org in (select org from visible)
  left join lateral (
    select u.user_id from training.users u
    where e.user_id is null and u.org = e.org and u.org in (select org from visible)
      and lower(u.email) = lower(e.email) and u.removed_at is null
    order by u.user_id
    limit 1
  ) m on true
  where e.org in (select org from visible)
), latest_actions as (
  -- Enable and disable (or an add and a removal of one group) are one question: the latest answers it.
  select distinct on (a.org, a.employee_id, a.family) a.org, a.employee_id, a.email, a.kind, a.group_id, a.status, a.error_code, a.error_message, a.finished_at
  from (
    select a.id, a.org, a.employee_id, a.email, a.kind, a.group_id, a.status, a.error_code, a.error_message, a.finished_at, case
        when a.kind in ('enable', 'disable') then 'access'
        when a.kind in ('add-to-group', 'remove-from-group') then 'group ' || a.group_id::text
        else a.kind
      end as family
    from trainsync.provisioning_actions a
    where a.org in (select org from visible) and a.status <> 'skipped'
  ) a
  order by a.org, a.employee_id, a.family, a.id desc
)
select 'active_without_account'::text as kind, ea.employee_id, ea.email, ea.user_id,
  case
    when ea.account_id is null then 'active in HR; no platform account found (no user id known, no account with this e-mail)'
    else 'active in HR; the platform no longer lists account ' || ea.account_id::text
  end as detail,
  ea.org
from employee_accounts ea
where ea.removed_at is null and ea.status = 'active'
  and (ea.account_id is null or ea.account_gone)

union all

select 'leaver_with_access', ea.employee_id, ea.email, u.user_id,
  case
    when ea.removed_at is not null then 'not in the HR feed since ' || to_char(ea.removed_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
    else 'inactive in HR'
  end || '; the platform account still has access',
  ea.org
from employee_accounts ea
join training.users u on u.org = ea.org and u.user_id = ea.account_id and u.removed_at is null and u.has_access
  and u.org in (select org from visible)
where (ea.status = 'inactive' or ea.removed_at is not null)
  -- The same account held by an active employee (a re-hire under a new id) is no leaver's.
  and not exists (
    select 1 from employee_accounts o
    where o.org = ea.org and o.account_id = u.user_id and o.removed_at is null and o.status = 'active'
  )
  -- Repaired since the listing was read: trainsync disabled the account after the sync saw it.
  and not exists (
    select 1 from latest_actions la
    where la.org = ea.org and la.employee_id = ea.employee_id and la.kind = 'disable' and la.status = 'succeeded'
      and la.finished_at > u.last_seen_at
  )

union all

select 'account_without_employee', null, u.email, u.user_id,
  'platform account with access (role ' || coalesce(u.role, 'unknown') || coalesce(', organisation identifier ' || u.organisation_identifier, '')
    || ') that no HR employee lists',
  u.org
from training.users u
where u.org in (select org from visible) and u.removed_at is null and u.has_access
  -- Only once this organisation's feed was loaded.
  and exists (select 1 from training.employees e where e.org = u.org)
  and not exists (select 1 from employee_accounts ea where ea.org = u.org and ea.account_id = u.user_id)
  and not exists (select 1 from training.employees e where e.org = u.org and lower(e.email) = lower(u.email))
  and not exists (select 1 from training.employees e where e.org = u.org and e.employee_id = u.organisation_identifier)

union all

select 'pending_action', la.employee_id, la.email, i.platform_user_id,
  la.kind || coalesce(' ' || la.group_id::text, '') || ': ' || la.status
    || coalesce(' (' || la.error_code || ')', '') || coalesce(': ' || la.error_message, ''),
  la.org
from latest_actions la
left join trainsync.identities i on i.org = la.org and i.employee_id = la.employee_id
  and i.org in (select org from visible)
where la.status in ('failed', 'needs-identity');

comment on view training.hr_reconciliation is
  'One row per HR/platform discrepancy: kind in active_without_account, leaver_with_access, account_without_employee, pending_action.';

grant select on training.hr_reconciliation to trainsync_reader;
-- Readers once read the actions and identities themselves (a security_invoker view): their
-- grants in schema trainsync go (per-organisation readers: src/warehouse/org-readers.ts),
-- with the reader-only policies those two tables had. Row-level security on them stays:
-- trainsync's application role is bound by it (95_trainsync_app.sql).
revoke all on all tables in schema trainsync from trainsync_reader;
revoke usage on schema trainsync from trainsync_reader;
drop policy if exists organisation_rows on trainsync.provisioning_actions;
drop policy if exists organisation_rows on trainsync.identities;
