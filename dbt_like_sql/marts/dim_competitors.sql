-- One row per domain x competitor ever listed: current attributes, first and last day seen. Whether it
-- is active comes from its domain's row in dim_domains: competitors are listed per listed domain, so a
-- competitor is listed on the account's latest snapshot day exactly when its domain is active and the
-- competitor was listed on the domain's last day.
with

competitors as (
    select * from staging.stg_competitors
),

domains as (
    select * from marts.dim_domains
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
        coalesce(d.is_active and s.last_seen_date = d.last_seen_date, false) as is_active
    from summarised as s
    inner join latest as c
        on c.domain_id = s.domain_id and c.competitor_id = s.competitor_id
    left join domains as d
        on d.domain_id = s.domain_id
)

select * from final
