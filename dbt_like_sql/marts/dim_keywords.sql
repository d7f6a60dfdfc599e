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
        arg_max(domain_id, snapshot_date) as domain_id,
        arg_max(keyword, snapshot_date) as keyword,
        arg_max(search_engine, snapshot_date) as search_engine,
        arg_max(device, snapshot_date) as device,
        arg_max(location_code, snapshot_date) as location_code,
        arg_max(location_name, snapshot_date) as location_name,
        arg_max(language_code, snapshot_date) as language_code,
        arg_max(frequency, snapshot_date) as frequency,
        arg_max(tag_ids, snapshot_date) as tag_ids,
        arg_max(search_volume, snapshot_date) as search_volume,
        arg_max(created_at, snapshot_date) as created_at,
        min(snapshot_date) as first_seen_date,
        max(snapshot_date) as last_seen_date,
        count(*) as snapshots,
        count(position) as ranking_snapshots,
        arg_max(position, snapshot_date) as latest_position,
        arg_max(ranking_url, snapshot_date) as latest_ranking_url,
        min(position) as best_position,
        min(snapshot_date) filter (where position is not null) as first_ranking_date
    from keywords
    group by account, keyword_id
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
        s.domain_id,
        s.keyword,
        s.search_engine,
        s.device,
        s.location_code,
        s.location_name,
        s.language_code,
        s.frequency,
        s.tag_ids,
        s.search_volume,
        s.created_at,
        s.first_seen_date,
        s.last_seen_date,
        s.last_seen_date = l.latest_snapshot_date as is_active,
        s.snapshots,
        s.ranking_snapshots,
        s.latest_position,
        s.latest_ranking_url,
        s.best_position,
        b.best_position_first_date,
        s.first_ranking_date
    from summarised as s
    left join latest_account_snapshot as l
        on l.account = s.account
    left join best_position_dates as b
        on b.keyword_id = s.keyword_id
)

select * from final
