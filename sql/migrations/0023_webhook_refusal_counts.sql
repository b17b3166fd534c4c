-- Deliveries refused for their signature (missing or invalid: anyone on the network can
-- send one) are no longer a row each in trainsync.webhook_refusals: a flood of forged
-- requests must not grow the database at the sender's pace. The receiver counts them in
-- memory (and in the trainsync_webhook_signature_failures_total metric) and adds the
-- counts here every few seconds: at most one row per organisation, reason and minute.
-- trainsync.webhook_refusals keeps the deliveries that were signed correctly but refused
-- (organisation-mismatch), one row each: only a holder of the secret can make them.
create table trainsync.webhook_refusal_counts (
  org          text not null references training.organisations (slug),
  -- The minute (the receiver's clock, truncated) the refusals were counted in.
  minute       timestamptz not null,
  reason       text not null check (reason in ('missing', 'invalid')),
  refusals     bigint not null check (refusals > 0),
  -- The header that was checked (its name, never its value) and the last sender seen.
  header       text not null,
  last_remote  text,
  primary key (org, minute, reason)
);
create index webhook_refusal_counts_minute_idx on trainsync.webhook_refusal_counts (minute desc);
