-- One row per domain x competitor x snapshot day while the competitor is listed, plus one row on the
-- day it disappears: the competitor set of each domain over time, with added / removed events.
with

competitors as (
    select * from staging.stg_competitors
),

domains as (
    select * from staging.stg_domains
),

listed as (
    select
        c.account,
        c.domain_id,
        c.competitor_id,
        c.snapshot_date,
        c.competitor_domain,
        c.competitor_name,
        true as is_active,
        case
            when y.competitor_id is not null then 'retained'
            when dy.domain_id is not null then 'added'
            else 'new'
        end as competitor_event
    from competitors as c
    left join competitors as y
        on y.domain_id = c.domain_id
        and y.competitor_id = c.competitor_id
        and y.snapshot_date = c.snapshot_date - 1
    left join domains as dy
        on dy.domain_id = c.domain_id and dy.snapshot_date = c.snapshot_date - 1
),

removed as (
    select
        y.account,
        y.domain_id,
        y.competitor_id,
        y.snapshot_date + 1 as snapshot_date,
        y.competitor_domain,
        y.competitor_name,
        false as is_active,
        'removed' as competitor_event
    from competitors as y
    -- the domain is still listed the next day, so its competitor list was read and lacks this one
    inner join domains as dt
        on dt.domain_id = y.domain_id and dt.snapshot_date = y.snapshot_date + 1
    left join competitors as c
        on c.domain_id = y.domain_id
        and c.competitor_id = y.competitor_id
        and c.snapshot_date = y.snapshot_date + 1
    where c.competitor_id is null
),

final as (
    select * from listed
    union all
    select * from removed
)

select * from final
