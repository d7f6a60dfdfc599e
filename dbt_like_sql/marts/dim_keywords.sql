-- One row per keyword ever tracked: attributes as of its last snapshot, first and last day seen, latest
-- and best position. Incremental fold: the runner hands in this model's previous rows as
-- marts.dim_keywords and only the keyword days loaded since (empty previous rows and every day in a
-- full build); each keyword's row is its previous row combined with its new days.
with

keywords as not materialized (
    select * from staging.stg_keywords
),

previous as (
    select * from marts.dim_keywords
),

new_days as (
    select
        account,
        keyword_id,
        min(snapshot_date) as first_seen_date,
        max(snapshot_date) as last_seen_date,
        count(*) as snapshots,
        count(position) as ranking_snapshots,
        -- (position, day) packed into one sortable number: its minimum is the best position and the
        -- first day it was reached
        min(cast(position as bigint) * 1000000 + date_diff('day', date '2000-01-01', snapshot_date)) as best_position_key,
        min(snapshot_date) filter (where position is not null) as first_ranking_date
    from keywords
    group by account, keyword_id
),

latest_new as (
    select k.*
    from keywords as k
    inner join new_days as n
        on n.keyword_id = k.keyword_id and n.last_seen_date = k.snapshot_date
),

combined as (
    select
        coalesce(n.account, p.account) as account,
        coalesce(n.keyword_id, p.keyword_id) as keyword_id,
        n.keyword_id is not null as seen_again,
        p.domain_id as previous_domain_id,
        least(p.first_seen_date, n.first_seen_date) as first_seen_date,
        greatest(p.last_seen_date, n.last_seen_date) as last_seen_date,
        coalesce(p.snapshots, 0) + coalesce(n.snapshots, 0) as snapshots,
        coalesce(p.ranking_snapshots, 0) + coalesce(n.ranking_snapshots, 0) as ranking_snapshots,
        least(
            cast(p.best_position as bigint) * 1000000 + date_diff('day', date '2000-01-01', p.best_position_first_date),
            n.best_position_key
        ) as best_position_key,
        least(p.first_ranking_date, n.first_ranking_date) as first_ranking_date
    from previous as p
    full outer join new_days as n
        on n.keyword_id = p.keyword_id
),

latest_account_snapshot as (
    select account, max(last_seen_date) as latest_snapshot_date
    from combined
    group by account
),

final as (
    select
        c.account,
        c.keyword_id,
        case when c.seen_again then l.domain_id else p.domain_id end as domain_id,
        case when c.seen_again then l.keyword else p.keyword end as keyword,
        case when c.seen_again then l.search_engine else p.search_engine end as search_engine,
        case when c.seen_again then l.device else p.device end as device,
        case when c.seen_again then l.location_code else p.location_code end as location_code,
        case when c.seen_again then l.location_name else p.location_name end as location_name,
        case when c.seen_again then l.language_code else p.language_code end as language_code,
        case when c.seen_again then l.frequency else p.frequency end as frequency,
        case when c.seen_again then l.tag_ids else p.tag_ids end as tag_ids,
        case when c.seen_again then l.search_volume else p.search_volume end as search_volume,
        case when c.seen_again then l.created_at else p.created_at end as created_at,
        c.first_seen_date,
        c.last_seen_date,
        c.last_seen_date = a.latest_snapshot_date as is_active,
        c.snapshots,
        c.ranking_snapshots,
        case when c.seen_again then l.position else p.latest_position end as latest_position,
        case when c.seen_again then l.ranking_url else p.latest_ranking_url end as latest_ranking_url,
        cast(c.best_position_key // 1000000 as integer) as best_position,
        date '2000-01-01' + cast(c.best_position_key % 1000000 as integer) as best_position_first_date,
        c.first_ranking_date
    from combined as c
    left join latest_new as l
        on l.keyword_id = c.keyword_id
    left join previous as p
        on p.keyword_id = c.keyword_id
    left join latest_account_snapshot as a
        on a.account = c.account
)

select * from final
