-- One row per tracked keyword per snapshot day, with the filter columns every dashboard uses
-- (account, domain, search_engine, device, location, snapshot_date).
-- estimated_clicks = estimated CTR at the day's position x monthly search volume: the keyword's expected
-- clicks per month at that position (0 when not ranking, null without a search volume). Computed here
-- until the analytics marts carry an estimated-clicks column; repoint this file at that mart then.
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
    case
        when r.position is null then 'not ranking'
        when r.position <= 3 then '1-3'
        when r.position <= 10 then '4-10'
        when r.position <= 20 then '11-20'
        when r.position <= 50 then '21-50'
        else '51-100'
    end as position_bucket,
    r.ranking_url,
    r.previous_ranking_url,
    r.url_changed,
    r.movement_1d,
    r.position_change_1d,
    r.search_volume,
    r.estimated_ctr,
    r.visibility_score,
    r.estimated_ctr * r.search_volume as estimated_clicks,
    b.best_position_to_date,
    b.best_position_first_date
from marts.fct_keyword_rankings_daily r
left join marts.dim_domains d on d.domain_id = r.domain_id
left join marts.dim_keywords k on k.keyword_id = r.keyword_id
left join marts.fct_keyword_best_position_daily b
    on b.keyword_id = r.keyword_id and b.snapshot_date = r.snapshot_date
