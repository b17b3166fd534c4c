-- `trainsync cancel` (and a sync taking over an orphaned job with other options) closes
-- the run of the job it removes as cancelled: neither succeeded nor failed.
alter table trainsync.runs drop constraint runs_status_check;
alter table trainsync.runs add constraint runs_status_check
  check (status in ('running', 'succeeded', 'incomplete', 'failed', 'cancelled'));
