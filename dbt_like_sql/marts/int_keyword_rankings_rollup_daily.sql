-- Grain: one row per grouping level x group x snapshot day, where a group is a segment (domain x search
-- engine x device x location x language), a domain, or a tag. The one place that counts and averages
-- the keyword-day columns of fct_keyword_rankings_daily: agg_domain_segment_daily, agg_domain_daily and
-- agg_tag_daily each select their grouping level from here instead of writing the same rollup again.
with

rankings as not materialized (
    select * from marts.fct_keyword_rankings_daily
),

keyword_tags as (
    select * from staging.stg_keyword_tags
),

domain_levels as (
    select grouping_level
    from (values ('segment'), ('domain')) as levels (grouping_level)
),

-- each keyword-day once in its segment, once in its domain and once per tag it carries that day
members as (
    select
        g.grouping_level,
        r.domain_id as group_id,
        case when g.grouping_level = 'segment' then r.search_engine end as segment_search_engine,
        case when g.grouping_level = 'segment' then r.device end as segment_device,
        case when g.grouping_level = 'segment' then r.location_code end as segment_location_code,
        case when g.grouping_level = 'segment' then r.language_code end as segment_language_code,
        r.*
    from rankings as r
    cross join domain_levels as g
    union all
    select
        'tag' as grouping_level,
        kt.tag_id as group_id,
        null as segment_search_engine,
        null as segment_device,
        null as segment_location_code,
        null as segment_language_code,
        r.*
    from keyword_tags as kt
    inner join rankings as r
        on r.keyword_id = kt.keyword_id and r.snapshot_date = kt.snapshot_date
),

aggregated as (
    select
        grouping_level,
        account,
        group_id,
        segment_search_engine as search_engine,
        segment_device as device,
        segment_location_code as location_code,
        segment_language_code as language_code,
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
        avg(abs(position_change_1d)) as volatility_1d,
        sum(abs(position_change_1d)) as absolute_change_1d_sum,
        count(position_change_1d) as ranking_both_days_keywords
    from members
    group by
        grouping_level, account, group_id, segment_search_engine, segment_device, segment_location_code,
        segment_language_code, snapshot_date
)

select * from aggregated
