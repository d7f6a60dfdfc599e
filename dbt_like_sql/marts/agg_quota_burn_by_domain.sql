-- One row per account x domain x snapshot day: keywords added to and removed from the domain since the
-- previous day, i.e. which domains burned the keyword quota.
with

keywords as not materialized (
    select * from staging.stg_keywords
),

usage as (
    select * from staging.stg_usage
),

domains as (
    select * from staging.stg_domains
),

added as (
    select
        k.account,
        k.domain_id,
        k.snapshot_date,
        count(*) filter (where y.keyword_id is null) as keywords_added,
        count(*) as keywords_tracked
    from keywords as k
    -- only days whose previous day was extracted for the account can tell what was added
    inner join usage as u
        on u.account = k.account and u.snapshot_date = k.snapshot_date - 1
    left join keywords as y
        on y.keyword_id = k.keyword_id and y.snapshot_date = k.snapshot_date - 1
    group by k.account, k.domain_id, k.snapshot_date
),

removed as (
    select
        y.account,
        y.domain_id,
        y.snapshot_date + 1 as snapshot_date,
        count(*) as keywords_removed
    from keywords as y
    -- only days that were extracted for the account can tell what was removed
    inner join usage as u
        on u.account = y.account and u.snapshot_date = y.snapshot_date + 1
    left join keywords as k
        on k.keyword_id = y.keyword_id and k.snapshot_date = y.snapshot_date + 1
    where k.keyword_id is null
    group by y.account, y.domain_id, y.snapshot_date
),

combined as (
    select
        coalesce(a.account, r.account) as account,
        coalesce(a.domain_id, r.domain_id) as domain_id,
        coalesce(a.snapshot_date, r.snapshot_date) as snapshot_date,
        coalesce(a.keywords_added, 0) as keywords_added,
        coalesce(r.keywords_removed, 0) as keywords_removed,
        coalesce(a.keywords_tracked, 0) as keywords_tracked
    from added as a
    full outer join removed as r
        on r.account = a.account and r.domain_id = a.domain_id and r.snapshot_date = a.snapshot_date
),

final as (
    select
        c.account,
        c.domain_id,
        d.domain,
        c.snapshot_date,
        c.keywords_added,
        c.keywords_removed,
        c.keywords_added - c.keywords_removed as net_keywords_change,
        c.keywords_tracked,
        c.keywords_added * 100.0
            / nullif(sum(c.keywords_added) over (partition by c.account, c.snapshot_date), 0)
            as share_of_account_added_pct
    from combined as c
    left join domains as d
        on d.domain_id = c.domain_id and d.snapshot_date = c.snapshot_date
)

select * from final
