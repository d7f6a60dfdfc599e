-- One row per domain x search engine x device x location x language x snapshot day
-- (marts.agg_domain_segment_daily). Weighted back to a domain's visibility with
-- sum(visibility * tracked_keywords) / sum(tracked_keywords), the definition in docs/how-to/querying.md. Estimated clicks,
-- winners / losers and top-10 entries / exits are the mart's per-segment counts (summed by the charts).
select
    v.account,
    coalesce(v.domain, d.domain, v.domain_id) as domain,
    v.search_engine,
    v.device,
    coalesce(l.location_name, v.location_code) as location,
    v.language_code,
    v.snapshot_date,
    v.tracked_keywords,
    v.ranking_keywords,
    v.visibility,
    v.visibility * v.tracked_keywords as visibility_x_keywords,
    v.keywords_position_1_3,
    v.keywords_position_4_10,
    v.keywords_position_11_20,
    v.keywords_position_21_50,
    v.keywords_position_51_100,
    v.keywords_not_ranking,
    v.estimated_clicks,
    v.winners_1d,
    v.losers_1d,
    v.significant_winners_1d,
    v.significant_losers_1d,
    v.entered_top_10,
    v.exited_top_10
from marts.agg_domain_segment_daily v
left join marts.dim_domains d on d.domain_id = v.domain_id
left join (
    select distinct search_engine, location_code, location_name
    from staging.stg_locations
    qualify row_number() over (partition by search_engine, location_code order by snapshot_date desc) = 1
) l on l.search_engine = v.search_engine and l.location_code = v.location_code
