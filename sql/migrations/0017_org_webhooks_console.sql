-- Several organisations (issue 20), the webhooks and console wing: webhook events, their
-- results and refusals, and the console's sessions and audit trail gain `org` (the
-- organisation's slug, see 0014). Rows made before hold `default`'s data: the column
-- is added with that default, which is then dropped, so no row is lost and every new
-- row names its organisation explicitly.

-- Webhook events: one receiver, a path per organisation (/webhooks/platform/<slug>),
-- verified with that organisation's secret. The platform's eventId is unique only
-- within one sender, and two organisations' webhooks are two senders: the key is
-- (org, event_id), so a retried delivery is recognised per organisation.
alter table trainsync.webhook_event_results drop constraint webhook_event_results_event_id_fkey;

alter table trainsync.webhook_events add column org text not null default 'default' references training.organisations (slug);
alter table trainsync.webhook_events alter column org drop default;
alter table trainsync.webhook_events drop constraint webhook_events_pkey;
alter table trainsync.webhook_events add primary key (org, event_id);

-- Result ids: each organisation's key reads its own results (0015 keys results by
-- (org, result_id)), so a result named by two organisations' events is loaded twice,
-- once with each key; the pending rows are therefore looked up by (org, result_id).
-- No foreign key to training.organisations here: this table takes one row per result
-- of every event (a burst), and its event row already carries the checked org.
alter table trainsync.webhook_event_results add column org text not null default 'default';
alter table trainsync.webhook_event_results alter column org drop default;
alter table trainsync.webhook_event_results drop constraint webhook_event_results_pkey;
alter table trainsync.webhook_event_results add primary key (org, event_id, result_id);
alter table trainsync.webhook_event_results
  add constraint webhook_event_results_event_fkey foreign key (org, event_id) references trainsync.webhook_events (org, event_id) on delete cascade;

drop index trainsync.webhook_event_results_pending_idx;
create index webhook_event_results_pending_idx on trainsync.webhook_event_results (org, result_id, received_at) where processed_at is null;
-- The status section and the console read one organisation's newest events and backlog.
drop index trainsync.webhook_events_received_at_idx;
create index webhook_events_received_at_idx on trainsync.webhook_events (org, received_at desc);
drop index trainsync.webhook_events_pending_idx;
create index webhook_events_pending_idx on trainsync.webhook_events (org, received_at) where processed_at is null;

-- Refusals: the organisation whose path was posted to. Besides a missing or wrong
-- signature (401), a delivery signed correctly but naming another organisation's GUID
-- (organisationId) than the one learned for this path is refused too
-- (`organisation-mismatch`, 403); `detail` says which GUIDs, never a secret.
alter table trainsync.webhook_refusals add column org text not null default 'default' references training.organisations (slug);
alter table trainsync.webhook_refusals alter column org drop default;
alter table trainsync.webhook_refusals add column detail text;
alter table trainsync.webhook_refusals drop constraint webhook_refusals_reason_check;
alter table trainsync.webhook_refusals add constraint webhook_refusals_reason_check check (reason in ('missing', 'invalid', 'organisation-mismatch'));
create index webhook_refusals_org_idx on trainsync.webhook_refusals (org, id desc);

-- Console sessions: `org` is the organisation the console user looks at (the selector
-- at the top of every page); null means all of them. Unlike the data tables it may be
-- null: a session belongs to a console user, not to an organisation, and "all" is a
-- choice of its own. Sessions of before this migration see all (as they did).
alter table trainsync.console_sessions add column org text references training.organisations (slug) on delete set null;

-- The console's audit trail: the organisation each change was made in (the row's own:
-- a held plan's, an action's, a run's). Null only for changes that span every
-- organisation (bull-board's queue actions: one queue serves all of them). Existing
-- rows were made before organisations existed: `default`'s.
alter table trainsync.console_audit add column org text references training.organisations (slug);
update trainsync.console_audit set org = 'default';
create index console_audit_org_idx on trainsync.console_audit (org, id desc);
