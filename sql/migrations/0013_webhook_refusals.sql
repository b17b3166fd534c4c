-- Webhook deliveries refused for their signature (src/webhooks/receiver.ts), for the
-- console's Webhooks page. Never the body nor the signature's value: only when, why,
-- which header was checked and who sent it. Bounded by the webhook sweep (the last
-- 10,000 rows, none older than the event retention).
create table trainsync.webhook_refusals (
  id           bigserial primary key,
  refused_at   timestamptz not null default clock_timestamp(),
  reason       text not null check (reason in ('missing', 'invalid')),
  header       text not null,
  remote       text
);
create index webhook_refusals_refused_at on trainsync.webhook_refusals (refused_at desc);
