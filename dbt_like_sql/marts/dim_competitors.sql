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
        arg_max(competitor_domain, snapshot_date) as competitor_domain,
        arg_max(competitor_name, snapshot_date) as competitor_name,
        arg_max(created_at, snapshot_date) as created_at,
        min(snapshot_date) as first_seen_date,
        max(snapshot_date) as last_seen_date,
        count(*) as days_listed
    from competitors
    group by account, domain_id, competitor_id
),

final as (
    select
        s.account,
        s.domain_id,
        s.competitor_id,
        s.competitor_domain,
        s.competitor_name,
        s.created_at,
        s.first_seen_date,
        s.last_seen_date,
        s.days_listed,
        s.last_seen_date = l.latest_snapshot_date as is_active
    from summarised as s
    left join latest_account_snapshot as l
        on l.account = s.account
)

select * from final
