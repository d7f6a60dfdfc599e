-- One row per domain ever listed: attributes as of its last snapshot, first and last day seen.
with

domains as (
    select * from staging.stg_domains
),

keywords as (
    select * from staging.stg_keywords
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
        min(snapshot_date) as first_seen_date,
        max(snapshot_date) as last_seen_date
    from domains
    group by account, domain_id
),

latest as (
    select d.*
    from domains as d
    inner join summarised as s
        on s.domain_id = d.domain_id and s.last_seen_date = d.snapshot_date
),

keywords_on_last_day as (
    select
        k.domain_id,
        count(*) as tracked_keywords
    from keywords as k
    inner join summarised as s
        on s.domain_id = k.domain_id and s.last_seen_date = k.snapshot_date
    group by k.domain_id
),

final as (
    select
        s.account,
        s.domain_id,
        d.domain,
        d.host,
        d.match_type,
        d.project_name,
        s.first_seen_date,
        s.last_seen_date,
        s.last_seen_date = l.latest_snapshot_date as is_active,
        coalesce(k.tracked_keywords, 0) as tracked_keywords
    from summarised as s
    inner join latest as d
        on d.domain_id = s.domain_id
    left join latest_account_snapshot as l
        on l.account = s.account
    left join keywords_on_last_day as k
        on k.domain_id = s.domain_id
)

select * from final
