-- Each organisation's schedule of each synced resource, as the worker that registers the
-- schedules last wrote it (src/sync/schedules-store.ts, at the worker's start): what the
-- freshness view (sql/views/80_freshness.sql) shows a BI reader and what the metrics hand
-- the "data stale" alert, which compares the age of a resource's last complete run with it.
-- Row security binds it like every table with an org column (sql/views/95_trainsync_app.sql).
create table trainsync.sync_schedules (
  org           text not null references training.organisations (slug),
  resource      text not null,
  -- The cron line (UTC) the worker registered: its TRAINSYNC_CRON_* setting (or the orgs
  -- file's), else the resource's default, moved by the organisation's spread.
  pattern       text not null,
  -- The longest gap between two fires of the pattern, in seconds (a weekday job's is the
  -- weekend's); null when it fires less than twice in 400 days.
  every_seconds integer check (every_seconds > 0),
  updated_at    timestamptz not null default now(),
  primary key (org, resource)
);
