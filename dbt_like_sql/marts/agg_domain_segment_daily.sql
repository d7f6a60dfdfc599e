-- Grain: one row per domain x search engine x device x location x language x snapshot day (a
-- "segment"): ranking distribution, average positions, visibility, estimated clicks, comparable
-- keywords, winners and losers on four horizons, top 3 / top 10 entries and exits, volatility. Every rule
-- is a column of fct_keyword_rankings_daily; this model only counts and averages them.
with

rankings as (
    select * from marts.fct_keyword_rankings_daily
),

domains as (
    select * from staging.stg_domains
),

aggregated as (
    select
        account,
        domain_id,
        search_engine,
        device,
        location_code,
        language_code,
        snapshot_date,
        count(*) as tracked_keywords,
        count(position) as ranking_keywords,
        avg(position) as average_position,
        avg(penalised_position) as penalised_average_position,
        count(*) filter (where position_bucket = '1-3') as keywords_position_1_3,
        count(*) filter (where position_bucket = '4-10') as keywords_position_4_10,
        count(*) filter (where position_bucket = '11-20') as keywords_position_11_20,
        count(*) filter (where position_bucket = '21-50') as keywords_position_21_50,
        count(*) filter (where position_bucket = '51-100') as keywords_position_51_100,
        count(*) filter (where position_bucket = 'not_ranking') as keywords_not_ranking,
        avg(visibility_score) as visibility,
        sum(visibility_score * search_volume) / nullif(sum(search_volume), 0) as volume_weighted_visibility,
        sum(estimated_clicks) as estimated_clicks,
        any_value(ctr_curve_version) as ctr_curve_version,
        count(*) filter (where movement_1d <> 'new') as comparable_keywords_1d,
        count(*) filter (where is_winner_1d) as winners_1d,
        count(*) filter (where is_loser_1d) as losers_1d,
        count(*) filter (where is_significant_winner_1d) as significant_winners_1d,
        count(*) filter (where is_significant_loser_1d) as significant_losers_1d,
        count(*) filter (where movement_7d <> 'new') as comparable_keywords_7d,
        count(*) filter (where is_winner_7d) as winners_7d,
        count(*) filter (where is_loser_7d) as losers_7d,
        count(*) filter (where is_significant_winner_7d) as significant_winners_7d,
        count(*) filter (where is_significant_loser_7d) as significant_losers_7d,
        count(*) filter (where movement_30d <> 'new') as comparable_keywords_30d,
        count(*) filter (where is_winner_30d) as winners_30d,
        count(*) filter (where is_loser_30d) as losers_30d,
        count(*) filter (where is_significant_winner_30d) as significant_winners_30d,
        count(*) filter (where is_significant_loser_30d) as significant_losers_30d,
        count(*) filter (where movement_previous <> 'new') as comparable_keywords_previous,
        count(*) filter (where is_winner_previous) as winners_previous,
        count(*) filter (where is_loser_previous) as losers_previous,
        count(*) filter (where is_significant_winner_previous) as significant_winners_previous,
        count(*) filter (where is_significant_loser_previous) as significant_losers_previous,
        count(*) filter (where entered_top_3) as entered_top_3,
        count(*) filter (where exited_top_3) as exited_top_3,
        count(*) filter (where entered_top_10) as entered_top_10,
        count(*) filter (where exited_top_10) as exited_top_10,
        avg(abs(position_change_1d)) as volatility_1d
    from rankings
    group by account, domain_id, search_engine, device, location_code, language_code, snapshot_date
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
