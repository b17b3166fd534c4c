-- Completion events the platform pushes (webhooks). An event is acknowledged only once
-- its row has committed, so a crash after the 2xx loses nothing: processing is driven
-- from these tables (a queued job per result, and a sweep of what is still pending).

create table trainsync.webhook_events (
  -- The platform's eventId (lower case): a retried delivery has the same one.
  event_id        text primary key,
  event_type      text not null,
  organisation_id text,
  -- The envelope's `sent`, when it parses.
  sent_at         timestamptz,
  -- The whole envelope as received.
  payload         jsonb not null,
  received_at     timestamptz not null default clock_timestamp(),
  -- Set when every result the event names is loaded, or left to the nightly sync.
  processed_at    timestamptz,
  -- loaded: every named result is in training.results; not-found: the API could not
  -- return one after every retry; failed: a permanent error; test: TEST_EVENT;
  -- unknown-type: stored, nothing to do; invalid: a known type whose data is unusable.
  outcome         text check (outcome in ('loaded', 'not-found', 'failed', 'test', 'unknown-type', 'invalid')),
  error           text,
  check ((processed_at is null) = (outcome is null))
);

create index webhook_events_pending_idx on trainsync.webhook_events (received_at) where processed_at is null;
create index webhook_events_received_at_idx on trainsync.webhook_events (received_at desc);

-- The results an event names (COURSE_COMPLETE: one; MULTI_COURSE_COMPLETE: the parent
-- and each child). One fetch serves every pending row of a result received before it.
create table trainsync.webhook_event_results (
  event_id     text not null references trainsync.webhook_events (event_id) on delete cascade,
  result_id    uuid not null,
  -- The event's received_at, copied: a fetch covers the rows received before it started.
  received_at  timestamptz not null,
  processed_at timestamptz,
  outcome      text check (outcome in ('loaded', 'not-found', 'failed')),
  primary key (event_id, result_id),
  check ((processed_at is null) = (outcome is null))
);

create index webhook_event_results_pending_idx on trainsync.webhook_event_results (result_id, received_at) where processed_at is null;
