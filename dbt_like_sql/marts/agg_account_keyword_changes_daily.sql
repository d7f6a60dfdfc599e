-- Grain: one row per account x snapshot day: the keyword stock and its change since the account's
-- previous snapshot, additions and removals apart (a bulk import and a clean-up on the same day do not
-- cancel out of sight).
with

usage as (
    select * from staging.stg_usage
),

keywords as not materialized (
    select * from staging.stg_keywords
),

snapshots as (
    select
        account,
        snapshot_date,
        lag(snapshot_date) over (partition by account order by snapshot_date) as lag_date
    from usage
),

pairs as (
    select
        account,
        snapshot_date,
        -- the previous snapshot counts only within 31 days, so a full rebuild equals the incremental one
        case when lag_date >= snapshot_date - 31 then lag_date end as previous_snapshot_date
    from snapshots
),

tracked as (
    select account, snapshot_date, count(*) as keywords_tracked
    from keywords
    group by account, snapshot_date
),

added as (
    select pr.account, pr.snapshot_date, count(*) as keywords_added
    from pairs as pr
    inner join keywords as k
        on k.account = pr.account and k.snapshot_date = pr.snapshot_date
    left join keywords as p
        on p.keyword_id = k.keyword_id and p.snapshot_date = pr.previous_snapshot_date
    where pr.previous_snapshot_date is not null and p.keyword_id is null
    group by pr.account, pr.snapshot_date
),

removed as (
    select pr.account, pr.snapshot_date, count(*) as keywords_removed
    from pairs as pr
    inner join keywords as p
        on p.account = pr.account and p.snapshot_date = pr.previous_snapshot_date
    left join keywords as k
        on k.keyword_id = p.keyword_id and k.snapshot_date = pr.snapshot_date
    where k.keyword_id is null
    group by pr.account, pr.snapshot_date
),

final as (
    select
        pr.account,
        pr.snapshot_date,
        pr.previous_snapshot_date,
        date_diff('day', pr.previous_snapshot_date, pr.snapshot_date) as days_since_previous,
        coalesce(t.keywords_tracked, 0) as keywords_tracked,
        case when pr.previous_snapshot_date is not null then coalesce(a.keywords_added, 0) end as keywords_added,
        case when pr.previous_snapshot_date is not null then coalesce(r.keywords_removed, 0) end as keywords_removed,
        case when pr.previous_snapshot_date is not null
            then coalesce(a.keywords_added, 0) - coalesce(r.keywords_removed, 0)
        end as net_keywords_change
    from pairs as pr
    left join tracked as t
        on t.account = pr.account and t.snapshot_date = pr.snapshot_date
    left join added as a
        on a.account = pr.account and a.snapshot_date = pr.snapshot_date
    left join removed as r
        on r.account = pr.account and r.snapshot_date = pr.snapshot_date
)

select * from final
