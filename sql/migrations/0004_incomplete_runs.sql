-- A run that could not read everything it meant to ends 'incomplete', never 'succeeded',
-- and the windows it could not finish are remembered so the next plain run reads them again.

alter table trainsync.runs drop constraint runs_status_check;
alter table trainsync.runs add constraint runs_status_check
  check (status in ('running', 'succeeded', 'incomplete', 'failed'));

create table trainsync.unfinished_windows (
  resource    text not null,
  -- 'YYYY-MM-DD..YYYY-MM-DD' for a date window, 'full' for a walk of every page.
  window_key  text not null,
  reason      text not null,
  run_id      bigint references trainsync.runs (id) on delete set null,
  recorded_at timestamptz not null default now(),
  primary key (resource, window_key)
);
