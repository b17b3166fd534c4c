-- Sightings are written for every result of a full walk (5,000 a batch) and read once, by
-- the removal pass at the walk's end, which joins them all by hash; the index cost each
-- batch a random insert per row (about a fifth of Postgres' work on a full reload) and
-- served no query. Deletes by run_id scan a table that holds one run's rows at most.
drop index if exists trainsync.result_sightings_run_result_idx;
