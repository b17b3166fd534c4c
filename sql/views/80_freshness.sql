-- How fresh each organisation's data is, for BI dashboards ("data as of …") that know nothing
-- of trainsync's runs: one row per organisation (org, the last column) and synced resource
-- that has a run or a schedule.
--   last_complete_at   when the newest succeeded run of the resource ended (an incomplete run
--                      left windows unread, a failed one read nothing it kept: neither counts);
--                      null when none has yet
--   age                now() - last_complete_at
--   schedule           the cron line (UTC) the worker registered for it; null when its schedule
--                      is off (a resource synced by hand or by an outside scheduler)
--   schedule_interval  the longest gap between two runs the schedule makes (a weekday job's is
--                      the weekend's): data older than this (by a margin) missed a run;
--                      null without a schedule
-- The same figures feed the "data stale" alert (deploy/prometheus/trainsync.rules.yml).
--
-- Like training.hr_reconciliation (70), it reads schema trainsync (the runs, the schedules)
-- with its owner's rights, so readers need nothing there; it filters itself to the
-- organisations training.visible_organisations() returns for the reader (its own
-- organisation for a per-organisation reader, every one for trainsync_reader), at each read
-- (the CTE `visible`), and is a security barrier so a reader's own predicates see only its
-- output. test/reader-side-channels.test.ts attacks it with every other view.
--
-- The resources with a run: a skip scan of the index (org, resource, started_at desc), one
-- probe per organisation and resource, never a read of every run (there is one per run of
-- every job, hourly ones included).
create or replace view training.freshness with (security_invoker = false, security_barrier = true) as
with recursive visible as (
  -- unnest(array(…)): the planner counts 10 organisations, not the function's 1,000: a small cost,
  -- so no JIT compilation (a second and more per read) for a query of index probes.
  select unnest(array(select training.visible_organisations())) as org
), run_resources as (
  select v.org, f.resource
  from visible v
  cross join lateral (select r.resource from trainsync.runs r where r.org = v.org order by r.resource limit 1) f
  union all
  select p.org, n.resource
  from run_resources p
  cross join lateral (
    select r.resource from trainsync.runs r where r.org = p.org and r.resource > p.resource order by r.resource limit 1
  ) n
), pairs as (
  select org, resource from run_resources
  union
  select s.org, s.resource from trainsync.sync_schedules s where s.org in (select org from visible)
)
select
  p.resource,
  c.finished_at as last_complete_at,
  now() - c.finished_at as age,
  s.pattern as schedule,
  make_interval(secs => s.every_seconds) as schedule_interval,
  -- Last, as in every view (docs/reference.md, "Schema").
  p.org
from pairs p
left join lateral (
  select r.finished_at from trainsync.runs r
  where r.org = p.org and r.resource = p.resource and r.status = 'succeeded'
  order by r.started_at desc
  limit 1
) c on true
left join trainsync.sync_schedules s on s.org = p.org and s.resource = p.resource;

comment on view training.freshness is
  'Per organisation and synced resource: when its last complete run ended, how old that makes its data, and its schedule.';

grant select on training.freshness to trainsync_reader;
