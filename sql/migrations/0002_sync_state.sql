-- Operational state of the sync jobs (schema `trainsync`; the BI role gets nothing here).

create schema if not exists trainsync;

create table trainsync.runs (
  id          bigserial primary key,
  resource    text not null,
  job_id      text,
  mode        text,
  params      jsonb not null default '{}'::jsonb,
  started_at  timestamptz not null default now(),
  finished_at timestamptz,
  status      text not null default 'running' check (status in ('running', 'succeeded', 'failed')),
  pages       integer not null default 0,
  inserted    integer not null default 0,
  updated     integer not null default 0,
  unchanged   integer not null default 0,
  quarantined integer not null default 0,
  removed     integer not null default 0,
  error       text,
  -- Why a run did nothing useful, e.g. 'not applicable' (no unlimited plan) or
  -- 'not available' (the platform does not offer the listing).
  note        text
);

create index runs_resource_started_at_idx on trainsync.runs (resource, started_at desc);

-- Progress inside long jobs; each checkpoint commits with the rows it covers.
create table trainsync.checkpoints (
  key        text primary key,
  value      jsonb not null,
  run_id     bigint references trainsync.runs (id) on delete set null,
  updated_at timestamptz not null default now()
);

create table trainsync.watermarks (
  resource   text primary key,
  value      text not null,
  updated_at timestamptz not null default now()
);

-- Records that failed validation, kept raw for a person to look at. The same raw
-- record seen again in a later run refreshes its row instead of adding one.
create table trainsync.quarantine (
  id             bigserial primary key,
  run_id         bigint references trainsync.runs (id) on delete set null,
  resource       text not null,
  raw            jsonb not null,
  message        text not null,
  page           integer,
  quarantined_at timestamptz not null default now(),
  last_seen_at   timestamptz not null default now(),
  times_seen     integer not null default 1
);

create unique index quarantine_resource_raw_key on trainsync.quarantine (resource, md5(raw::text));

-- Result ids seen by a full-mode run, for removal detection at its end. Logged on
-- purpose: after a crash an emptied (unlogged) table would mark every result removed.
-- No foreign key to runs: it would cost a check per sighted row.
create table trainsync.result_sightings (
  run_id    bigint not null,
  result_id uuid not null
);

create index result_sightings_run_result_idx on trainsync.result_sightings (run_id, result_id);
