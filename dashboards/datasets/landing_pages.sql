-- One row per domain x ranking URL (landing page) x snapshot day (marts.agg_ranking_url_daily): the
-- keywords ranking with the URL that day (any engine, device, location, language), their best position
-- and estimated clicks, and keywords gained / lost against their previous snapshot. The mart's grain has
-- no search engine, device or location, so those filters do not apply here.
select
    u.account,
    coalesce(d.domain, u.domain_id) as domain,
    u.ranking_url,
    u.snapshot_date,
    u.ranking_keywords,
    u.average_position,
    u.best_position,
    u.estimated_clicks,
    u.keywords_gained,
    u.keywords_lost
from marts.agg_ranking_url_daily u
left join marts.dim_domains d on d.domain_id = u.domain_id
