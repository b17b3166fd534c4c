-- Several organisations (issue 20), the sync wing: every table the sync jobs write (the
-- warehouse's platform data and the trainsync state of runs) gains `org`, the slug of the
-- organisation (training.organisations) whose API key listed the row. Rows of a warehouse
-- made before organisations existed become `default`'s: no row is lost, none rewritten
-- by hand. The default is dropped at once, so no later write can forget the organisation.
--
-- Keys: the platform's ids are GUIDs, but nothing promises they are disjoint across
-- organisations (two keys of one tenant, a shared course, a user in two organisations),
-- so every key that holds a platform id gets `org` FIRST:
-- - courses (org, course_id): a shared course is listed by several organisations, each
--   with its own pass rate and its own removed_at; BI joins course_id across orgs.
-- - users (org, user_id): a person in two organisations has a row per organisation (their
--   access, role and groups differ per organisation).
-- - results (org, result_id): each key sees its own results; the reference notes do not
--   promise result GUIDs are disjoint (a user in two orgs), and per-org rows keep each
--   organisation's report exact and row-level security a plain `org = …`.
-- - filters, answers, groups, group courses, group members, seats: per organisation.
--
-- Foreign keys to training.organisations (slug) on the small tables only; NOT on results,
-- result_filter_answers or trainsync.result_sightings: they are written 5,000 rows a
-- batch and a check per row would cost the load (the loaders always write a configured
-- organisation's slug, which registerOrganisations has stored before any job runs).

-- training.courses and their categories -------------------------------------------------
alter table training.courses add column org text not null default 'default' references training.organisations (slug);
alter table training.courses alter column org drop default;
alter table training.course_categories add column org text not null default 'default';
alter table training.course_categories alter column org drop default;
-- The categories' foreign key names the old key: replaced by one on (org, course_id).
alter table training.course_categories drop constraint course_categories_course_id_fkey;
alter table training.course_categories drop constraint course_categories_pkey;
alter table training.courses drop constraint courses_pkey;
alter table training.courses add primary key (org, course_id);
alter table training.course_categories add primary key (org, course_id, category_type, category_name);
alter table training.course_categories add foreign key (org, course_id) references training.courses (org, course_id) on delete cascade;

-- training.results and their filter answers (no foreign keys: write speed, see above) ------
alter table training.results add column org text not null default 'default';
alter table training.results alter column org drop default;
alter table training.results drop constraint results_pkey;
alter table training.results add primary key (org, result_id);
-- results_course_id_idx, results_user_id_idx and results_date_completed_idx stay on the id
-- alone: BI joins course_id and user_id across organisations as well as within one, the
-- views join on org AND the id (the id is selective enough: a GUID repeats once per org at
-- most), and a text column more in three indexes would slow every result batch.
alter table training.result_filter_answers add column org text not null default 'default';
alter table training.result_filter_answers alter column org drop default;
alter table training.result_filter_answers drop constraint result_filter_answers_pkey;
alter table training.result_filter_answers add primary key (org, result_id, answer_id);

-- training.reporting_filters and their answers ------------------------------------------
alter table training.reporting_filters add column org text not null default 'default' references training.organisations (slug);
alter table training.reporting_filters alter column org drop default;
alter table training.reporting_filters drop constraint reporting_filters_pkey;
alter table training.reporting_filters add primary key (org, filter_id);
alter table training.reporting_filter_answers add column org text not null default 'default' references training.organisations (slug);
alter table training.reporting_filter_answers alter column org drop default;
alter table training.reporting_filter_answers drop constraint reporting_filter_answers_pkey;
alter table training.reporting_filter_answers add primary key (org, answer_id);
drop index training.reporting_filter_answers_filter_id_idx;
create index reporting_filter_answers_filter_id_idx on training.reporting_filter_answers (org, filter_id);

-- training.seat_usage: one observation per organisation and instant ----------------------
alter table training.seat_usage add column org text not null default 'default' references training.organisations (slug);
alter table training.seat_usage alter column org drop default;
alter table training.seat_usage drop constraint seat_usage_pkey;
alter table training.seat_usage add primary key (org, observed_at);

-- training.users ---------------------------------------------------------------------
alter table training.users add column org text not null default 'default' references training.organisations (slug);
alter table training.users alter column org drop default;
alter table training.users drop constraint users_pkey;
alter table training.users add primary key (org, user_id);
drop index training.users_email_idx;
create index users_email_idx on training.users (org, lower(email));

-- training.groups, group_courses, group_members (0006) ------------------------------------
alter table training.groups add column org text not null default 'default' references training.organisations (slug);
alter table training.groups alter column org drop default;
alter table training.group_courses add column org text not null default 'default';
alter table training.group_courses alter column org drop default;
alter table training.group_courses drop constraint group_courses_group_id_fkey;
alter table training.group_courses drop constraint group_courses_pkey;
alter table training.groups drop constraint groups_pkey;
alter table training.groups add primary key (org, group_id);
alter table training.group_courses add primary key (org, group_id, course_id);
alter table training.group_courses add foreign key (org, group_id) references training.groups (org, group_id) on delete cascade;
drop index training.group_courses_course_id_idx;
create index group_courses_course_id_idx on training.group_courses (org, course_id);
alter table training.group_members add column org text not null default 'default' references training.organisations (slug);
alter table training.group_members alter column org drop default;
alter table training.group_members drop constraint group_members_pkey;
alter table training.group_members add primary key (org, group_id, user_id);
drop index training.group_members_user_id_idx;
create index group_members_user_id_idx on training.group_members (org, user_id) where removed_at is null;
drop index training.group_members_employee_id_idx;
create index group_members_employee_id_idx on training.group_members (org, employee_id);

-- trainsync.runs: a run is one organisation's (its ids stay one bigserial: a run id names
-- a run in every organisation, so lookups by id need no org) ------------------------------
alter table trainsync.runs add column org text not null default 'default' references training.organisations (slug);
alter table trainsync.runs alter column org drop default;
drop index trainsync.runs_resource_started_at_idx;
create index runs_resource_started_at_idx on trainsync.runs (org, resource, started_at desc);

-- trainsync.checkpoints, watermarks, unfinished_windows: keyed per organisation -----------
alter table trainsync.checkpoints add column org text not null default 'default' references training.organisations (slug);
alter table trainsync.checkpoints alter column org drop default;
alter table trainsync.checkpoints drop constraint checkpoints_pkey;
alter table trainsync.checkpoints add primary key (org, key);

alter table trainsync.watermarks add column org text not null default 'default' references training.organisations (slug);
alter table trainsync.watermarks alter column org drop default;
alter table trainsync.watermarks drop constraint watermarks_pkey;
alter table trainsync.watermarks add primary key (org, resource);

alter table trainsync.unfinished_windows add column org text not null default 'default' references training.organisations (slug);
alter table trainsync.unfinished_windows alter column org drop default;
alter table trainsync.unfinished_windows drop constraint unfinished_windows_pkey;
alter table trainsync.unfinished_windows add primary key (org, resource, window_key);

-- trainsync.quarantine: the same raw record from two organisations is two records --------
alter table trainsync.quarantine add column org text not null default 'default' references training.organisations (slug);
alter table trainsync.quarantine alter column org drop default;
drop index trainsync.quarantine_resource_raw_key;
create unique index quarantine_resource_raw_key on trainsync.quarantine (org, resource, md5(raw::text));

-- trainsync.result_sightings: no foreign key and no index (0011), as before ----------------
alter table trainsync.result_sightings add column org text not null default 'default';
alter table trainsync.result_sightings alter column org drop default;
