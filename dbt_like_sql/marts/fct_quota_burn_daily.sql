-- One row per account x snapshot day x quota metric (keywords, dataRows): usage, utilisation, daily
-- delta, burn rates, projected exhaustion and threshold crossings.
with

usage as (
    select * from staging.stg_usage
),

metrics as (
    select
        account,
        snapshot_date,
        'keywords' as metric,
        keywords_usage as usage,
        keywords_limit as quota_limit,
        coalesce(keywords_remaining, keywords_limit - keywords_usage) as remaining
    from usage
    union all
    select
        account,
        snapshot_date,
        'dataRows' as metric,
        data_rows_usage as usage,
        data_rows_limit as quota_limit,
        coalesce(data_rows_remaining, data_rows_limit - data_rows_usage) as remaining
    from usage
),

with_previous_day as (
    select
        m.*,
        m.usage * 100.0 / nullif(m.quota_limit, 0) as utilisation_pct,
        p.usage as previous_usage,
        p.quota_limit as previous_limit,
        p.usage * 100.0 / nullif(p.quota_limit, 0) as previous_utilisation_pct
    from metrics as m
    left join metrics as p
        on p.account = m.account and p.metric = m.metric and p.snapshot_date = m.snapshot_date - 1
),

deltas as (
    select
        *,
        usage - previous_usage as daily_delta,
        usage < previous_usage as usage_reset,
        quota_limit <> previous_limit as limit_changed,
        case when usage >= previous_usage then usage - previous_usage end as burn_delta
    from with_previous_day
),

burn_rates as (
    select
        *,
        avg(burn_delta) over (
            partition by account, metric order by snapshot_date
            range between interval 6 days preceding and current row
        ) as burn_rate_7d,
        avg(burn_delta) over (
            partition by account, metric order by snapshot_date
            range between interval 27 days preceding and current row
        ) as burn_rate_28d
    from deltas
),

final as (
    select
        account,
        snapshot_date,
        metric,
        usage,
        quota_limit,
        remaining,
        utilisation_pct,
        daily_delta,
        burn_rate_7d,
        burn_rate_28d,
        case when burn_rate_7d > 0 then greatest(remaining, 0) / burn_rate_7d end as days_to_exhaustion,
        case
            when burn_rate_7d > 0
                then snapshot_date + cast(ceil(greatest(remaining, 0) / burn_rate_7d) as integer)
        end as projected_exhaustion_date,
        usage_reset,
        limit_changed,
        case
            when previous_utilisation_pct is not null and utilisation_pct is not null
                then previous_utilisation_pct < 80 and utilisation_pct >= 80
        end as crossed_80_pct,
        case
            when previous_utilisation_pct is not null and utilisation_pct is not null
                then previous_utilisation_pct < 100 and utilisation_pct >= 100
        end as crossed_100_pct
    from burn_rates
)

select * from final
