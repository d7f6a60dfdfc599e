-- Grain: one row per account x tag x snapshot day, over the keywords carrying the tag that day (all
-- domains): the same metrics as agg_domain_daily, counted once in int_keyword_rankings_rollup_daily.
with

tags as (
    select * from staging.stg_tags
),

grouped as (
    select * from marts.int_keyword_rankings_rollup_daily
),

aggregated as (
    select
        *,
        group_id as tag_id
    from grouped
    where grouping_level = 'tag'
),

final as (
    select
        a.account,
        a.tag_id,
        t.tag_name,
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
    left join tags as t
        on t.account = a.account and t.tag_id = a.tag_id and t.snapshot_date = a.snapshot_date
)

select * from final
