-- Row-level security on the warehouse (issue 20), re-applied at every migrate so a
-- table added later is covered too. Who sees what:
-- - trainsync itself connects as the owner of these tables (it runs the migrations),
--   and an owner is not subject to row-level security: the loads see every row.
-- - trainsync_reader (BI logins granted it) sees every organisation's rows.
-- - a per-organisation reader (training.organisations.reader_role, created by
--   `trainsync migrate` from the orgs file) sees only its organisation's rows: every
--   policy reads training.organisations, which itself shows such a reader only its own
--   row. The reader is not a member of trainsync_reader, so SET ROLE cannot widen it.
-- - any other role sees no row.
-- These reader policies are bound to the readers only (trainsync_reader, and
-- trainsync_org_reader, which every per-organisation reader role is made a member of), not to
-- PUBLIC: trainsync's own role has policies of its own (sql/views/95), and a PUBLIC policy was
-- evaluated for its statements too, OR-ed with its own: a scan of training.organisations that
-- called training.sees_organisation for every organisation, ~20 ms a statement at 1,000
-- organisations, whatever the statement read.
-- Views are declared security_invoker, so the policies apply to whoever reads them; the
-- one that is not, training.hr_reconciliation, is a security barrier that filters itself
-- (sql/views/70).

-- Runs in the reader's session, inside the policy on training.organisations: with pg_temp
-- searched first (its place when a search_path leaves it out), a reader's temporary table
-- named pg_roles would decide which organisations it sees. pg_temp last, and every name
-- qualified. (Functions and operators are never looked up in pg_temp.)
create or replace function training.sees_organisation(reader_role text) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_has_role(current_user, 'trainsync_reader', 'MEMBER')
      or exists (
        select 1 from pg_catalog.pg_roles r
        where r.rolname = reader_role and pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER')
      )
$$;

-- The group of the per-organisation reader roles (src/warehouse/org-readers.ts grants it to
-- each at every migrate; here, to those already recorded). It holds no privilege: only the
-- policies below name it. Roles are per cluster: another database may create it at once.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'trainsync_org_reader') then
    create role trainsync_org_reader nologin;
  end if;
exception when duplicate_object or unique_violation then
  null;
end
$$;

do $$
declare
  r record;
begin
  for r in select o.reader_role from training.organisations o join pg_roles p on p.rolname = o.reader_role loop
    if not pg_has_role(r.reader_role, 'trainsync_org_reader', 'MEMBER') then
      execute format('grant trainsync_org_reader to %I', r.reader_role);
    end if;
  end loop;
exception when insufficient_privilege then
  raise notice 'trainsync: run as a superuser: GRANT trainsync_org_reader TO each organisation''s reader role';
end
$$;

alter table training.organisations enable row level security;

do $$
declare
  t record;
begin
  drop policy if exists organisation_readers on training.organisations;
  create policy organisation_readers on training.organisations for select to trainsync_reader, trainsync_org_reader using (training.sees_organisation(reader_role));
  for t in
    select c.relname
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attname = 'org' and not a.attisdropped
    where n.nspname = 'training' and c.relkind in ('r', 'p')
  loop
    execute format('alter table training.%I enable row level security', t.relname);
    execute format('drop policy if exists organisation_rows on training.%I', t.relname);
    execute format('create policy organisation_rows on training.%I for select to trainsync_reader, trainsync_org_reader using (org in (select slug from training.organisations))', t.relname);
  end loop;
end
$$;
