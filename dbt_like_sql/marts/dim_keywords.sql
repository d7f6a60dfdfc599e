-- One row per keyword ever tracked: attributes as of its last snapshot, first and last day seen, latest
-- and best position.
with

keywords as (
    select * from staging.stg_keywords
),

latest_account_snapshot as (
    select account, max(snapshot_date) as latest_snapshot_date
    from keywords
    group by account
),

summarised as (
    select
        account,
        keyword_id,
        min(snapshot_date) as first_seen_date,
        max(snapshot_date) as last_seen_date,
        count(*) as snapshots,
        count(position) as ranking_snapshots,
        min(position) as best_position,
        min(snapshot_date) filter (where position is not null) as first_ranking_date
    from keywords
    group by account, keyword_id
),

latest as (
    select k.*
    from keywords as k
    inner join summarised as s
        on s.keyword_id = k.keyword_id and s.last_seen_date = k.snapshot_date
),

best_position_dates as (
    select
        k.keyword_id,
        min(k.snapshot_date) as best_position_first_date
    from keywords as k
    inner join summarised as s
        on s.keyword_id = k.keyword_id and s.best_position = k.position
    group by k.keyword_id
),

final as (
    select
        s.account,
        s.keyword_id,
        k.domain_id,
        k.keyword,
        k.search_engine,
        k.device,
        k.location_code,
        k.location_name,
        k.language_code,
        k.frequency,
        k.tag_ids,
        k.search_volume,
        k.created_at,
        s.first_seen_date,
        s.last_seen_date,
        s.last_seen_date = l.latest_snapshot_date as is_active,
        s.snapshots,
        s.ranking_snapshots,
        k.position as latest_position,
        k.ranking_url as latest_ranking_url,
        s.best_position,
        b.best_position_first_date,
        s.first_ranking_date
    from summarised as s
    inner join latest as k
        on k.keyword_id = s.keyword_id
    left join latest_account_snapshot as l
        on l.account = s.account
    left join best_position_dates as b
        on b.keyword_id = s.keyword_id
)

select * from final
