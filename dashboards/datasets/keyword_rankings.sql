-- One row per tracked keyword per snapshot day, with the filter columns every dashboard uses
-- (account, domain, search_engine, device, location, snapshot_date).
-- Every metric is the mart's own column (position_bucket, movement, estimated_clicks = the mart's
-- CTR(position) x monthly search volume); this file only adds names for the filter columns, and
-- tracked_keyword: one tracked keyword's label (keyword, domain, engine, device, location), unique per
-- keyword_id, so that a chart has one series per tracked keyword.
select
    r.account,
    coalesce(d.domain, r.domain_id) as domain,
    r.search_engine,
    r.device,
    coalesce(k.location_name, r.location_code) as location,
    r.language_code,
    r.snapshot_date,
    r.keyword_id,
    r.keyword,
    r.position,
    r.position_bucket,
    r.ranking_url,
    r.previous_ranking_url,
    r.url_changed,
    r.movement_1d,
    r.position_change_1d,
    r.is_winner_1d,
    r.is_loser_1d,
    r.entered_top_10,
    r.exited_top_10,
    r.search_volume,
    r.estimated_ctr,
    r.visibility_score,
    r.estimated_clicks,
    b.best_position_to_date,
    b.best_position_first_date,
    concat_ws(' · ', r.keyword, coalesce(d.domain, r.domain_id), r.search_engine || ' ' || r.device,
              coalesce(k.location_name, r.location_code)) as tracked_keyword
from marts.fct_keyword_rankings_daily r
left join marts.dim_domains d on d.domain_id = r.domain_id
left join marts.dim_keywords k on k.keyword_id = r.keyword_id
left join marts.fct_keyword_best_position_daily b
    on b.keyword_id = r.keyword_id and b.snapshot_date = r.snapshot_date
