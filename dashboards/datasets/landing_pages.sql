-- One row per ranking URL (landing page) per keyword per snapshot day: only keyword-days that rank.
-- Landing-page charts group by ranking_url. Repoint at the analytics landing-page mart when it lands.
select *
from ({{ include('keyword_rankings.sql') }})
where ranking_url is not null
