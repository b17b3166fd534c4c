-- One row per current result and reporting-filter answer it carries: the shape BI
-- tools want for "completion by department" style slicing.
create or replace view training.result_filter_details with (security_invoker = true) as
select
  r.result_id,
  r.user_id,
  r.course_id,
  f.filter_id,
  f.name as filter_name,
  a.answer_id,
  a.answer,
  r.org
from training.results r
join training.result_filter_answers rfa on rfa.org = r.org and rfa.result_id = r.result_id
join training.reporting_filter_answers a on a.org = rfa.org and a.answer_id = rfa.answer_id and a.removed_at is null
join training.reporting_filters f on f.org = a.org and f.filter_id = a.filter_id and f.removed_at is null
where r.removed_at is null;
