-- Requests each run made to the platform (every HTTP attempt, retries and pages read
-- ahead included), so an operator sees what a run cost of the request budget.
alter table trainsync.runs add column requests integer not null default 0;
