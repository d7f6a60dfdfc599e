-- domain_visibility.sql restricted to the latest published snapshot day: "the visibility today" for a
-- big-number chart (Superset's ad-hoc filters cannot hold the sub-query that finds the latest day).
select *
from ({{ include('domain_visibility.sql') }})
where snapshot_date = (select max(snapshot_date) from marts.agg_domain_segment_daily)
