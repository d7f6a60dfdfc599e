-- One row per domain x competitor ever listed: current attributes, first and last day seen.
with

competitors as (
    select * from staging.stg_competitors
),

domains as (
    select * from staging.stg_domains
),

latest_account_snapshot as (
    select account, max(snapshot_date) as latest_snapshot_date
    from domains
    group by account
),

summarised as (
    select
        account,
        domain_id,
        competitor_id,
        min(snapshot_date) as first_seen_date,
        max(snapshot_date) as last_seen_date,
        count(*) as days_listed
    from competitors
    group by account, domain_id, competitor_id
),

latest as (
    select c.*
    from competitors as c
    inner join summarised as s
        on s.domain_id = c.domain_id
        and s.competitor_id = c.competitor_id
        and s.last_seen_date = c.snapshot_date
),

final as (
    select
        s.account,
        s.domain_id,
        s.competitor_id,
        c.competitor_domain,
        c.competitor_name,
        c.created_at,
        s.first_seen_date,
        s.last_seen_date,
        s.days_listed,
        s.last_seen_date = l.latest_snapshot_date as is_active
    from summarised as s
    inner join latest as c
        on c.domain_id = s.domain_id and c.competitor_id = s.competitor_id
    left join latest_account_snapshot as l
        on l.account = s.account
)

select * from final
