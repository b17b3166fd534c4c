-- trainsync's own connections are bound by row-level security too. After the migrations
-- (run as the owner of the tables, DATABASE_URL's login), trainsync connects with
-- role trainsync_app (`-c role=trainsync_app`, src/warehouse/pool.ts), which owns no
-- table, so every policy below applies to it. The login must be a member of it.
--
-- What trainsync_app sees of a table with an org column: the rows of the organisations its
-- transaction's scope names (set_config('trainsync.org', 'slug[,slug…]', true), by
-- src/warehouse/scope.ts), or every row when the transaction set trainsync.all_orgs = on
-- (the one named escape, acrossOrganisations, for migrations' follow-ups, sweeps over every
-- organisation and `status --org all`). Outside a scope it sees no row, and it cannot write
-- a row of another organisation (WITH CHECK). Both settings are read once per statement
-- ((select ...) makes them an initplan), not once per row.

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

-- The login running the migrations is the one trainsync connects with: it must be able to
-- take the role. A login that cannot grant it to itself is told at start-up (exit 2, with
-- the GRANT to run as a superuser or a role with CREATEROLE).
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
      -- is read by its token before any organisation is known.
      and not (n.nspname = 'trainsync' and c.relname = 'console_sessions')
  loop
    execute format('alter table %I.%I enable row level security', t.nspname, t.relname);
    execute format('drop policy if exists app_org_rows on %I.%I', t.nspname, t.relname);
    execute format('create policy app_org_rows on %I.%I to trainsync_app using (%s) with check (%s)',
      t.nspname, t.relname, format(scoped, 'org'), format(scoped, 'org'));
  end loop;
end
$$;

-- The console's deployment-wide actions (the Queues page) are recorded without an organisation.
drop policy if exists app_deployment_rows on trainsync.console_audit;
create policy app_deployment_rows on trainsync.console_audit to trainsync_app using (org is null) with check (org is null);
