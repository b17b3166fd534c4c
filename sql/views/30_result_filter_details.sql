-- One row per current result and reporting-filter answer it carries: the shape BI
-- tools want for "completion by department" style slicing.
create or replace view training.result_filter_details as
select
  r.result_id,
  r.user_id,
  r.course_id,
  f.filter_id,
  f.name as filter_name,
  a.answer_id,
  a.answer
from training.results r
join training.result_filter_answers rfa on rfa.result_id = r.result_id
join training.reporting_filter_answers a on a.answer_id = rfa.answer_id and a.removed_at is null
join training.reporting_filters f on f.filter_id = a.filter_id and f.removed_at is null
where r.removed_at is null;
