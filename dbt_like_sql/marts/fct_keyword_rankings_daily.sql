-- One row per keyword per snapshot day: position, ranking URL, changes over 1, 7 and 30 calendar days
-- and their movement states, and the keyword's CTR-weighted visibility score (the per-keyword term the
-- visibility aggregates average). Incremental: every column depends only on the last 31 days.
with

keywords as (
    select * from staging.stg_keywords
),

ctr_curve as (
    select * from seeds.ctr_curve
),

current_curve as (
    select * from ctr_curve
    where curve_version = (select max(curve_version) from ctr_curve)
),

ctr_at_position_1 as (
    select curve_version, ctr as ctr_position_1
    from current_curve
    where position = 1
),

history as (
    select
        keyword_id,
        snapshot_date,
        position,
        ranking_url
    from keywords
),

previous_snapshot as (
    select
        keyword_id,
        snapshot_date,
        lag(snapshot_date) over by_keyword as previous_snapshot_date,
        lag(position) over by_keyword as previous_position,
        lag(ranking_url) over by_keyword as previous_ranking_url
    from history
    window by_keyword as (partition by keyword_id order by snapshot_date)
),

compared as (
    select
        k.account,
        k.domain_id,
        k.keyword_id,
        k.snapshot_date,
        k.keyword,
        k.search_engine,
        k.device,
        k.location_code,
        k.language_code,
        k.search_volume,
        k.position,
        k.ranking_url,
        -- the previous snapshot counts only within 31 days, so a full rebuild equals the incremental one
        case when p.previous_snapshot_date >= k.snapshot_date - 31 then p.previous_snapshot_date end
            as previous_snapshot_date,
        case when p.previous_snapshot_date >= k.snapshot_date - 31 then p.previous_position end
            as previous_position,
        case when p.previous_snapshot_date >= k.snapshot_date - 31 then p.previous_ranking_url end
            as previous_ranking_url,
        d1.snapshot_date is not null as has_snapshot_1d_ago,
        d1.position as position_1d_ago,
        d7.snapshot_date is not null as has_snapshot_7d_ago,
        d7.position as position_7d_ago,
        d30.snapshot_date is not null as has_snapshot_30d_ago,
        d30.position as position_30d_ago
    from keywords as k
    left join previous_snapshot as p
        on p.keyword_id = k.keyword_id and p.snapshot_date = k.snapshot_date
    left join history as d1
        on d1.keyword_id = k.keyword_id and d1.snapshot_date = k.snapshot_date - 1
    left join history as d7
        on d7.keyword_id = k.keyword_id and d7.snapshot_date = k.snapshot_date - 7
    left join history as d30
        on d30.keyword_id = k.keyword_id and d30.snapshot_date = k.snapshot_date - 30
),

scored as (
    select
        cmp.*,
        coalesce(c.ctr, 0) as estimated_ctr,
        c1.ctr_position_1,
        c1.curve_version as ctr_curve_version
    from compared as cmp
    cross join ctr_at_position_1 as c1
    left join current_curve as c
        on c.position = cmp.position
),

final as (
    select
        account,
        domain_id,
        keyword_id,
        snapshot_date,
        keyword,
        search_engine,
        device,
        location_code,
        language_code,
        search_volume,
        position,
        position is not null as is_ranking,
        ranking_url,
        previous_snapshot_date,
        previous_position,
        previous_ranking_url,
        case
            when previous_ranking_url is null or ranking_url is null then null
            else ranking_url <> previous_ranking_url
        end as url_changed,
        position_1d_ago,
        position_1d_ago - position as position_change_1d,
        case
            when not has_snapshot_1d_ago then 'new'
            when position is null and position_1d_ago is null then 'not_ranking'
            when position_1d_ago is null then 'entered'
            when position is null then 'dropped_out'
            when position < position_1d_ago then 'improved'
            when position > position_1d_ago then 'declined'
            else 'unchanged'
        end as movement_1d,
        position_7d_ago,
        position_7d_ago - position as position_change_7d,
        case
            when not has_snapshot_7d_ago then 'new'
            when position is null and position_7d_ago is null then 'not_ranking'
            when position_7d_ago is null then 'entered'
            when position is null then 'dropped_out'
            when position < position_7d_ago then 'improved'
            when position > position_7d_ago then 'declined'
            else 'unchanged'
        end as movement_7d,
        position_30d_ago,
        position_30d_ago - position as position_change_30d,
        case
            when not has_snapshot_30d_ago then 'new'
            when position is null and position_30d_ago is null then 'not_ranking'
            when position_30d_ago is null then 'entered'
            when position is null then 'dropped_out'
            when position < position_30d_ago then 'improved'
            when position > position_30d_ago then 'declined'
            else 'unchanged'
        end as movement_30d,
        estimated_ctr,
        estimated_ctr / ctr_position_1 * 100 as visibility_score,
        ctr_curve_version
    from scored
)

select * from final
