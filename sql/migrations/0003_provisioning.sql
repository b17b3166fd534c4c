-- Provisioning state (schema `trainsync`; operational, not for BI): the last applied
-- state per employee, the audit trail of every planned action, and the feeds read.
-- No passwords are stored anywhere: a set-password job carries its secret encrypted
-- in the queue payload only.

create schema if not exists trainsync;

-- One row per employee trainsync has provisioned: the identity (HR key, e-mail,
-- platform user) and the state last made true on the platform. Written only by the
-- provisioning jobs; `version` goes up by one on every write, and the planner's
-- action ids include it (a new row starts at 1; 0 means "never applied").
create table trainsync.identities (
  employee_id             text primary key,
  email                   text not null,
  -- null until the platform's GUID is known (POST users returns no id).
  platform_user_id        uuid,
  first_name              text,
  last_name               text,
  role                    text check (role in ('USER', 'ADMIN')),
  organisation_identifier text,
  active                  boolean not null,
  groups                  uuid[] not null default '{}',
  version                 integer not null default 1 check (version >= 1),
  created_at              timestamptz not null default now(),
  updated_at              timestamptz not null default now()
);

-- E-mails are unique across the platform and compared case-insensitively.
create unique index identities_email_key on trainsync.identities (lower(email));
create unique index identities_platform_user_id_key on trainsync.identities (platform_user_id)
  where platform_user_id is not null;

-- Each HR feed read (dry runs included), for the audit trail.
create table trainsync.feeds (
  id         bigserial primary key,
  hash       text not null check (hash ~ '^[0-9a-f]{64}$'),
  path       text not null,
  format     text not null check (format in ('csv', 'jsonl')),
  mode       text not null check (mode in ('full', 'delta')),
  dry_run    boolean not null default false,
  rows       integer not null,
  errors     integer not null,
  actions    integer not null default 0,
  refused    text,
  created_at timestamptz not null default now()
);

create index feeds_hash_idx on trainsync.feeds (hash);

-- The audit trail: one row per action, keyed by the planner's deterministic id, so
-- the same feed enqueued twice updates the row (attempts) instead of adding one.
create table trainsync.provisioning_actions (
  id            bigserial primary key,
  action_id     text not null unique,
  employee_id   text not null,
  email         text not null,
  kind          text not null check (kind in ('create-user', 'enable', 'disable', 'add-to-group', 'remove-from-group', 'set-password')),
  group_id      uuid,
  seq           smallint not null default 0,
  before        jsonb,
  after         jsonb not null default '{}'::jsonb,
  status        text not null default 'planned'
                check (status in ('planned', 'queued', 'succeeded', 'failed', 'needs-identity', 'skipped')),
  error_code    text,
  error_message text,
  attempts      integer not null default 0,
  feed_hash     text,
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  finished_at   timestamptz
);

create index provisioning_actions_employee_idx on trainsync.provisioning_actions (employee_id, created_at);
create index provisioning_actions_feed_hash_idx on trainsync.provisioning_actions (feed_hash);
-- `status` lists what needs a person; a partial index keeps that query cheap.
create index provisioning_actions_attention_idx on trainsync.provisioning_actions (status, updated_at)
  where status in ('failed', 'needs-identity');
