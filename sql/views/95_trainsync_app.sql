-- trainsync's own connections are bound by row-level security too. The migrations run as
-- the owner of the tables (TRAINSYNC_OWNER_DATABASE_URL); trainsync works as its own login
-- (DATABASE_URL, by default trainsync_worker: not a superuser, no BYPASSRLS, owning nothing,
-- created by migrate, src/warehouse/worker-login.ts), a member of trainsync_app, and takes
-- the role trainsync_app when a connection opens and in every scoped transaction
-- (src/warehouse/pool.ts, scope.ts), so every policy below applies to it. A statement that
-- resets its role falls back to the login, which the same policies bind (it inherits
-- trainsync_app's) and which owns nothing it could unbind.
--
-- What trainsync_app sees of a table with an org column: the rows of the organisations its
-- transaction's scope names (set_config('trainsync.org', 'slug[,slug…]', true), by
-- src/warehouse/scope.ts), or every row when the transaction set trainsync.all_orgs = on
-- (the one named escape, acrossOrganisations, for sweeps over every organisation and
-- `status --org all`). Outside a scope it sees no row, and it cannot write a row of another
-- organisation (WITH CHECK). Both settings are read once per statement ((select ...) makes
-- them an initplan), not once per row. They guard against a forgotten filter, not against a
-- statement whose text is wrong: no SQL text is built from values (test/sql-text.test.ts).
--
-- Row security is FORCED on each of these tables, so their owner is bound too unless it is
-- a superuser or has BYPASSRLS. The owner's own work (migrations, the organisations' rows,
-- the reader roles) runs on sessions that set trainsync.all_orgs = on (createOwnerPool), and
-- the owner is made a member of trainsync_app below, so a non-superuser owner sees and writes
-- every row through the same policy.

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'trainsync_app') then
    create role trainsync_app nologin;
  end if;
exception when duplicate_object then
  -- Another database's migrate (roles are per cluster) created it at the same instant.
  null;
end
$$;

-- The owner (the login running the migrations) joins the role: its sessions' all_orgs then
-- lets it through the policies of the forced tables. Where it was also trainsync's login (one
-- URL for both, as before), that login must be able to take the role too. A login that cannot
-- grant it to itself is told at start-up (exit 2, with the GRANT to run as a superuser or a
-- role with CREATEROLE).
do $$
begin
  if not pg_has_role(current_user, 'trainsync_app', 'MEMBER') then
    execute format('grant trainsync_app to %I', current_user);
  end if;
exception when insufficient_privilege then
  raise notice 'trainsync: run as a superuser: GRANT trainsync_app TO %', current_user;
end
$$;

grant usage on schema training, trainsync to trainsync_app;
grant select, insert, update, delete on all tables in schema training to trainsync_app;
grant select, insert, update, delete on all tables in schema trainsync to trainsync_app;
grant usage, select, update on all sequences in schema training to trainsync_app;
grant usage, select, update on all sequences in schema trainsync to trainsync_app;
-- The migrations' bookkeeping is the owner's: the application only reads it (requireMigrated).
revoke insert, update, delete on trainsync.schema_migrations, trainsync.applied_views from trainsync_app;

-- The scope of the transaction, as a policy reads it: a function would be called per row.
-- training.organisations: its own slug.
do $$
declare
  t record;
  scoped constant text :=
    '%I = any ((select string_to_array(current_setting(''trainsync.org'', true), '',''))::text[]) '
    || 'or (select current_setting(''trainsync.all_orgs'', true)) = ''on''';
begin
  alter table training.organisations enable row level security;
  alter table training.organisations force row level security;
  drop policy if exists app_org_rows on training.organisations;
  execute format('create policy app_org_rows on training.organisations to trainsync_app using (%s) with check (%s)',
    format(scoped, 'slug'), format(scoped, 'slug'));
  for t in
    select n.nspname, c.relname
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attname = 'org' and not a.attisdropped
    where n.nspname in ('training', 'trainsync') and c.relkind in ('r', 'p')
      -- A console session's org is the selector's choice, not organisation data: the session
      -- is read by its token before any organisation is known (its policy is below).
      and not (n.nspname = 'trainsync' and c.relname = 'console_sessions')
  loop
    execute format('alter table %I.%I enable row level security', t.nspname, t.relname);
    execute format('alter table %I.%I force row level security', t.nspname, t.relname);
    execute format('drop policy if exists app_org_rows on %I.%I', t.nspname, t.relname);
    execute format('create policy app_org_rows on %I.%I to trainsync_app using (%s) with check (%s)',
      t.nspname, t.relname, format(scoped, 'org'), format(scoped, 'org'));
  end loop;
end
$$;

-- The console's deployment-wide actions (the Queues page) are recorded without an organisation.
drop policy if exists app_deployment_rows on trainsync.console_audit;
create policy app_deployment_rows on trainsync.console_audit to trainsync_app using (org is null) with check (org is null);

-- The console's sessions: trainsync reads them by their token, whatever organisation they
-- select; row security is on and forced so that no other role (nor a non-superuser owner
-- outside its own work) reads them, as on every table with an org column.
alter table trainsync.console_sessions enable row level security;
alter table trainsync.console_sessions force row level security;
drop policy if exists app_sessions on trainsync.console_sessions;
create policy app_sessions on trainsync.console_sessions to trainsync_app using (true) with check (true);
