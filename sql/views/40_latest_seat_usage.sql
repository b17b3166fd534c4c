-- The most recent seat observation of each organisation (applicable = false: no unlimited
-- plan). One row per organisation: a single-organisation warehouse still has one row.
create or replace view training.latest_seat_usage with (security_invoker = true) as
select distinct on (org) observed_at, seats_in_use, total_seats, applicable, org
from training.seat_usage
order by org, observed_at desc;
