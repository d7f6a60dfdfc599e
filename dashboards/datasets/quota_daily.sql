-- One row per account x snapshot day x quota metric (marts.fct_quota_burn_daily), plus the reset that
-- bounds the projection. The API shows no billing-cycle date, so the next reset is estimated as one
-- month after the last day usage fell (usage_reset), and is null until a reset has been seen.
-- Repoint at the analytics quota-cycles mart when it lands.
with resets as (
    select account, metric, max(snapshot_date) as last_reset_date
    from marts.fct_quota_burn_daily
    where usage_reset
    group by all
)
select
    q.account,
    q.snapshot_date,
    q.metric,
    q.usage,
    q.quota_limit,
    q.remaining,
    q.utilisation_pct,
    q.daily_delta,
    q.burn_rate_7d,
    q.burn_rate_28d,
    q.days_to_exhaustion,
    q.projected_exhaustion_date,
    r.last_reset_date,
    cast(r.last_reset_date + interval 1 month as date) as next_reset_estimate,
    -- null when either date is unknown (no projection: not burning; no reset seen yet)
    q.projected_exhaustion_date < r.last_reset_date + interval 1 month as exhausts_before_reset
from marts.fct_quota_burn_daily q
left join resets r using (account, metric)
