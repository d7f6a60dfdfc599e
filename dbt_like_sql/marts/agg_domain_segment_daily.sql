-- Grain: one row per domain x search engine x device x location x language x snapshot day (a
-- "segment"): ranking distribution, average positions, visibility, estimated clicks, comparable
-- keywords, winners and losers on four horizons, top 3 / top 10 entries and exits, volatility. Every rule
-- is a column of fct_keyword_rankings_daily, counted and averaged once in
-- int_keyword_rankings_rollup_daily.
with

grouped as (
    select * from marts.int_keyword_rankings_rollup_daily
),

domains as (
    select * from staging.stg_domains
),

aggregated as (
    select
        *,
        group_id as domain_id
    from grouped
    where grouping_level = 'segment'
),

final as (
    select
        a.account,
        a.domain_id,
        d.domain,
        a.search_engine,
        a.device,
        a.location_code,
        a.language_code,
        a.snapshot_date,
        a.tracked_keywords,
        a.ranking_keywords,
        a.average_position,
        a.penalised_average_position,
        a.keywords_position_1_3,
        a.keywords_position_4_10,
        a.keywords_position_11_20,
        a.keywords_position_21_50,
        a.keywords_position_51_100,
        a.keywords_not_ranking,
        a.visibility,
        a.volume_weighted_visibility,
        a.estimated_clicks,
        a.ctr_curve_version,
        a.comparable_keywords_1d,
        a.winners_1d,
        a.losers_1d,
        a.significant_winners_1d,
        a.significant_losers_1d,
        a.comparable_keywords_7d,
        a.winners_7d,
        a.losers_7d,
        a.significant_winners_7d,
        a.significant_losers_7d,
        a.comparable_keywords_30d,
        a.winners_30d,
        a.losers_30d,
        a.significant_winners_30d,
        a.significant_losers_30d,
        a.comparable_keywords_previous,
        a.winners_previous,
        a.losers_previous,
        a.significant_winners_previous,
        a.significant_losers_previous,
        a.entered_top_3,
        a.exited_top_3,
        a.entered_top_10,
        a.exited_top_10,
        a.volatility_1d
    from aggregated as a
    left join domains as d
        on d.domain_id = a.domain_id and d.snapshot_date = a.snapshot_date
)

select * from final
