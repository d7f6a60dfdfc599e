-- Grain: one row per account x calendar day, from the account's first snapshot to the warehouse's
-- latest snapshot day: whether the day was extracted, what it holds, and whether the day before it is
-- missing (the comparisons of that day then fall back to the previous available snapshot).
with

usage as (
    select * from staging.stg_usage
),

domains as (
    select * from staging.stg_domains
),

keywords as (
    select * from staging.stg_keywords
),

competitors as (
    select * from staging.stg_competitors
),

tags as (
    select * from staging.stg_tags
),

accounts as (
    select account, min(snapshot_date) as first_snapshot_date
    from usage
    group by account
),

spine as (
    select
        a.account,
        a.first_snapshot_date,
        cast(s.day as date) as snapshot_date
    from accounts as a
    cross join lateral (
        select unnest(generate_series(a.first_snapshot_date, (select max(snapshot_date) from usage), interval 1 day))
            as day
    ) as s
),

domain_counts as (
    select account, snapshot_date, count(distinct domain_id) as domains_listed
    from domains
    group by account, snapshot_date
),

keyword_counts as (
    select account, snapshot_date, count(*) as keyword_rows, count(distinct domain_id) as domains_with_keywords
    from keywords
    group by account, snapshot_date
),

competitor_counts as (
    select account, snapshot_date, count(*) as competitor_rows
    from competitors
    group by account, snapshot_date
),

tag_counts as (
    select account, snapshot_date, count(*) as tag_rows
    from tags
    group by account, snapshot_date
),

days as (
    select
        s.account,
        s.snapshot_date,
        s.first_snapshot_date,
        u.snapshot_date is not null as has_snapshot,
        coalesce(d.domains_listed, 0) as domains_listed,
        coalesce(k.domains_with_keywords, 0) as domains_with_keywords,
        coalesce(k.keyword_rows, 0) as keyword_rows,
        coalesce(c.competitor_rows, 0) as competitor_rows,
        coalesce(t.tag_rows, 0) as tag_rows
    from spine as s
    left join usage as u
        on u.account = s.account and u.snapshot_date = s.snapshot_date
    left join domain_counts as d
        on d.account = s.account and d.snapshot_date = s.snapshot_date
    left join keyword_counts as k
        on k.account = s.account and k.snapshot_date = s.snapshot_date
    left join competitor_counts as c
        on c.account = s.account and c.snapshot_date = s.snapshot_date
    left join tag_counts as t
        on t.account = s.account and t.snapshot_date = s.snapshot_date
),

with_previous as (
    select
        *,
        max(case when has_snapshot then snapshot_date end) over (
            partition by account order by snapshot_date rows between unbounded preceding and 1 preceding
        ) as previous_snapshot_date
    from days
),

final as (
    select
        account,
        snapshot_date,
        has_snapshot,
        has_snapshot and domains_listed > 0 and domains_with_keywords = domains_listed as is_complete,
        domains_listed,
        domains_with_keywords,
        keyword_rows,
        competitor_rows,
        tag_rows,
        previous_snapshot_date,
        date_diff('day', previous_snapshot_date, snapshot_date) as days_since_previous_snapshot,
        has_snapshot and snapshot_date > first_snapshot_date
            and previous_snapshot_date is distinct from snapshot_date - 1 as previous_day_missing
    from with_previous
)

select * from final
