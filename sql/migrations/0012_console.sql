-- The operator console (src/console): plans the mass-disable guard held for a person to
-- review, the console's sessions, and what each console user changed.

-- A plan refused by the disable limit (provision without --force): its actions exactly
-- as planned and the people they affect, until an operator approves (its actions are
-- enqueued as `provision --force` would) or rejects it (nothing changes).
create table trainsync.held_plans (
  id           bigserial primary key,
  feed_hash    text not null check (feed_hash ~ '^[0-9a-f]{64}$'),
  file         text not null,
  mode         text not null check (mode in ('full', 'delta')),
  reason       text not null,
  message      text not null,
  -- PlannedAction[] as the planner made them (no secret: passwords never go in a plan).
  actions      jsonb not null,
  -- One entry per employee the plan touches: employee id, e-mail, the kinds of change.
  people       jsonb not null,
  disables     integer not null,
  -- The feed's valid rows and its rejected keys: approving snapshots them into training.employees,
  -- as `provision --force` would (so `reconcile --fix` plans from the feed that was applied).
  feed         jsonb not null,
  status       text not null default 'held' check (status in ('held', 'approved', 'rejected', 'superseded')),
  decided_by   text,
  decided_role text,
  decided_at   timestamptz,
  created_at   timestamptz not null default now()
);

create index held_plans_status_idx on trainsync.held_plans (status, created_at desc);

-- Console sessions: only a SHA-256 of the cookie's random token is stored, so a copy of
-- this table lets nobody in. Logging out deletes the row; an expired row is refused.
create table trainsync.console_sessions (
  token_hash  text primary key,
  username    text not null,
  role        text not null check (role in ('viewer', 'operator')),
  created_at  timestamptz not null default now(),
  expires_at  timestamptz not null
);

create index console_sessions_expires_idx on trainsync.console_sessions (expires_at);

-- Every change made in the console (approve, reject, retry), with who and in which role.
create table trainsync.console_audit (
  id         bigserial primary key,
  username   text not null,
  role       text not null,
  action     text not null,
  target     text not null,
  detail     jsonb not null default '{}'::jsonb,
  at         timestamptz not null default now()
);

create index console_audit_at_idx on trainsync.console_audit (at desc);

-- The console's audit trail lists actions newest first (also filtered by status or day).
create index provisioning_actions_updated_idx on trainsync.provisioning_actions (updated_at desc, id desc);
