-- Data health: one row per account x calendar day between the account's first and last snapshot day.
-- covered = the day has a keyword snapshot; resources_loaded counts the raw tables (of 7) with rows
-- that day; completeness_pct = resources_loaded / 7 * 100 (reference data counted once for all accounts).
-- Computed from the raw layer until the analytics coverage model lands; repoint this file at it then.
with per_resource as (
    select account, snapshot_date, 'domains' as resource, count(*) as row_count from raw.domains group by all
    union all select account, snapshot_date, 'keywords', count(*) from raw.keywords group by all
    union all select account, snapshot_date, 'competitors', count(*) from raw.competitors group by all
    union all select account, snapshot_date, 'tags', count(*) from raw.tags group by all
    union all select account, snapshot_date, 'usage', count(*) from raw.usage group by all
    union all select account, snapshot_date, 'locations', count(*) from raw.locations group by all
    union all select account, snapshot_date, 'languages', count(*) from raw.languages group by all
),
bounds as (
    select account, min(snapshot_date) as first_day, max(snapshot_date) as last_day
    from per_resource group by all
),
calendar as (
    select account, cast(unnest(generate_series(first_day, last_day, interval 1 day)) as date) as snapshot_date
    from bounds
),
day_stats as (
    select
        account,
        snapshot_date,
        count(distinct resource) as resources_loaded,
        sum(row_count) filter (where resource = 'keywords') as keyword_rows,
        sum(row_count) filter (where resource = 'domains') as domain_rows
    from per_resource
    group by all
)
select
    c.account,
    c.snapshot_date,
    coalesce(s.keyword_rows, 0) > 0 as covered,
    case when coalesce(s.keyword_rows, 0) > 0 then 1 else 0 end as day_covered,
    case when coalesce(s.keyword_rows, 0) > 0 then 0 else 1 end as day_missing,
    coalesce(s.resources_loaded, 0) as resources_loaded,
    round(coalesce(s.resources_loaded, 0) / 7 * 100, 1) as completeness_pct,
    coalesce(s.keyword_rows, 0) as keyword_rows,
    coalesce(s.domain_rows, 0) as domain_rows
from calendar c
left join day_stats s using (account, snapshot_date)
