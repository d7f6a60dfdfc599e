-- One row per tag x snapshot day: the headline ranking metrics over the keywords carrying the tag.
with

keyword_tags as (
    select * from staging.stg_keyword_tags
),

tags as (
    select * from staging.stg_tags
),

rankings as (
    select * from marts.fct_keyword_rankings_daily
),

tagged as (
    select
        kt.account,
        kt.tag_id,
        r.keyword_id,
        r.snapshot_date,
        r.position,
        r.search_volume,
        r.movement_1d,
        r.movement_7d,
        r.movement_30d,
        r.visibility_score,
        r.ctr_curve_version
    from keyword_tags as kt
    inner join rankings as r
        on r.keyword_id = kt.keyword_id and r.snapshot_date = kt.snapshot_date
),

aggregated as (
    select
        account,
        tag_id,
        snapshot_date,
        count(*) as tracked_keywords,
        count(position) as ranking_keywords,
        avg(position) as average_position,
        avg(coalesce(position, 101)) as penalised_average_position,
        count(*) filter (where position between 1 and 3) as keywords_position_1_3,
        count(*) filter (where position between 4 and 10) as keywords_position_4_10,
        count(*) filter (where position between 11 and 20) as keywords_position_11_20,
        count(*) filter (where position between 21 and 50) as keywords_position_21_50,
        count(*) filter (where position between 51 and 100) as keywords_position_51_100,
        count(*) filter (where position is null) as keywords_not_ranking,
        avg(visibility_score) as visibility,
        sum(visibility_score * search_volume) / nullif(sum(search_volume), 0) as volume_weighted_visibility,
        any_value(ctr_curve_version) as ctr_curve_version,
        count(*) filter (where movement_1d in ('improved', 'entered')) as winners_1d,
        count(*) filter (where movement_1d in ('declined', 'dropped_out')) as losers_1d,
        count(*) filter (where movement_7d in ('improved', 'entered')) as winners_7d,
        count(*) filter (where movement_7d in ('declined', 'dropped_out')) as losers_7d,
        count(*) filter (where movement_30d in ('improved', 'entered')) as winners_30d,
        count(*) filter (where movement_30d in ('declined', 'dropped_out')) as losers_30d
    from tagged
    group by account, tag_id, snapshot_date
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
        a.ctr_curve_version,
        a.winners_1d,
        a.losers_1d,
        a.winners_7d,
        a.losers_7d,
        a.winners_30d,
        a.losers_30d
    from aggregated as a
    left join tags as t
        on t.account = a.account and t.tag_id = a.tag_id and t.snapshot_date = a.snapshot_date
)

select * from final
