-- Several organisations in one warehouse (issue 20). Each organisation is named by its
-- slug (from TRAINSYNC_ORGS_FILE, or `default` without one); every training.* and
-- trainsync.* table gains an `org` column holding it (later migrations, one per wing).
-- trainsync writes this table from its configuration at every start.
create table training.organisations (
  slug            text primary key check (slug ~ '^[a-z][a-z0-9_-]{0,39}$'),
  name            text not null,
  -- The platform's GUID of the organisation, learned from the first verified webhook
  -- (the API has no call that returns it); a webhook for another GUID is refused.
  platform_org_id uuid unique,
  -- The role that sees only this organisation's rows (row-level security), if any.
  reader_role     text unique,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now()
);

-- A warehouse made before organisations existed holds one organisation's rows: they
-- are `default`'s, the organisation today's variables describe.
insert into training.organisations (slug, name) values ('default', 'default');
