-- The most recent seat observation (applicable = false: no unlimited plan).
create or replace view training.latest_seat_usage as
select observed_at, seats_in_use, total_seats, applicable
from training.seat_usage
order by observed_at desc
limit 1;
