-- The warehouse: platform data as BI reads it (schema `training`, a public contract:
-- see ARCHITECTURE.md "Warehouse tables"). Rows the platform stops listing are kept
-- and marked with removed_at, never deleted. No foreign keys between results and
-- courses/users: results can arrive before the course or user listing that names them.

create schema if not exists training;

create table training.courses (
  course_id     uuid primary key,
  name          text not null,
  pass_rate     smallint,
  first_seen_at timestamptz not null,
  -- Updated on every listing that shows the course; markMissingCourses compares it.
  last_seen_at  timestamptz not null,
  removed_at    timestamptz,
  -- When name, pass rate or categories last changed (or the course came back).
  updated_at    timestamptz not null
);

create table training.course_categories (
  course_id     uuid not null references training.courses (course_id) on delete cascade,
  category_type text not null,
  category_name text not null,
  primary key (course_id, category_type, category_name)
);

create table training.results (
  result_id              uuid primary key,
  user_id                uuid not null,
  course_id              uuid not null,
  multi_course_result_id uuid,
  is_complete            boolean not null,
  date_completed         timestamptz,
  score                  integer,
  maximum_score          integer,
  pass_rate              integer,
  course_type            text,
  -- Fields the platform sent that this version does not know (null when none), so a
  -- vendor addition is not lost before we model it.
  extra                  jsonb,
  first_seen_at          timestamptz not null,
  -- Results are many: an unchanged result is never rewritten (no dead tuples), so
  -- last_seen_at is the last load that wrote the row. Full-mode removal detection uses
  -- trainsync.result_sightings instead.
  last_seen_at           timestamptz not null,
  updated_at             timestamptz not null,
  removed_at             timestamptz
);

create index results_course_id_idx on training.results (course_id);
create index results_user_id_idx on training.results (user_id);
create index results_date_completed_idx on training.results (date_completed);

-- No foreign key to results: its check costs ~40% of loading the answers, and the only
-- writer (upsertResults) writes a result's answers with the result itself.
create table training.result_filter_answers (
  result_id uuid not null,
  answer_id uuid not null,
  primary key (result_id, answer_id)
);

create index result_filter_answers_answer_id_idx on training.result_filter_answers (answer_id);

create table training.reporting_filters (
  filter_id     uuid primary key,
  name          text not null,
  first_seen_at timestamptz not null,
  last_seen_at  timestamptz not null,
  removed_at    timestamptz,
  updated_at    timestamptz not null
);

create table training.reporting_filter_answers (
  answer_id     uuid primary key,
  -- No foreign key: an answer could be listed under a filter we have not stored yet.
  filter_id     uuid not null,
  answer        text not null,
  first_seen_at timestamptz not null,
  last_seen_at  timestamptz not null,
  removed_at    timestamptz,
  updated_at    timestamptz not null
);

create index reporting_filter_answers_filter_id_idx on training.reporting_filter_answers (filter_id);

create table training.seat_usage (
  observed_at  timestamptz primary key,
  -- Null together with applicable = false: the organisation has no unlimited plan
  -- (the platform answers NO_UNLIMITED_PLAN), so there is nothing to count.
  seats_in_use integer,
  total_seats  integer,
  applicable   boolean not null default true
);

create table training.users (
  user_id                 uuid primary key,
  email                   text not null,
  first_name              text,
  last_name               text,
  role                    text,
  organisation_identifier text,
  has_access              boolean not null,
  first_seen_at           timestamptz not null,
  last_seen_at            timestamptz not null,
  removed_at              timestamptz,
  updated_at              timestamptz not null
);

create index users_email_idx on training.users (lower(email));

-- A read-only role for BI tools. Roles are cluster-wide and several databases (test
-- files, parallel workers) may run this at once: losing the race is fine.
do $$
begin
  create role trainsync_reader nologin;
exception
  when duplicate_object or unique_violation then null;
end
$$;

grant usage on schema training to trainsync_reader;
grant select on all tables in schema training to trainsync_reader;
-- Views in sql/views and tables of later migrations are created by the same role.
alter default privileges in schema training grant select on tables to trainsync_reader;
