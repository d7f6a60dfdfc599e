-- One row per ranking alert per snapshot day, under the rules of seeds.alert_rules: keywords entering or
-- leaving the top 3 and the top 10 (against their previous snapshot), domains whose visibility or
-- estimated clicks fell by more than a threshold (against their previous snapshot), and quota metrics
-- newly projected to run out before their reset. The alert digests read this table for a run's days.
-- Incremental: every row depends only on the last 31 days.
with

rules as (
    select * from seeds.alert_rules
),

rankings as not materialized (
    select * from marts.fct_keyword_rankings_daily
),

domains as (
    select * from marts.agg_domain_daily
),

quota as (
    select * from marts.fct_quota_cycle_daily
),

-- one row per keyword and top-N change, from the flags fct_keyword_rankings_daily derives
keyword_changes as (
    select *, 'entered_top_3' as alert_type from rankings where entered_top_3
    union all
    select *, 'exited_top_3' as alert_type from rankings where exited_top_3
    union all
    select *, 'entered_top_10' as alert_type from rankings where entered_top_10
    union all
    select *, 'exited_top_10' as alert_type from rankings where exited_top_10
),

keyword_alerts as (
    select
        k.snapshot_date,
        k.account,
        k.alert_type,
        'keyword' as subject_kind,
        cast(k.keyword_id as varchar) as subject_id,
        k.domain_id,
        k.keyword as subject,
        concat_ws(' ', k.search_engine, k.device, cast(k.location_code as varchar), k.language_code) as segment,
        k.previous_snapshot_date,
        cast(k.previous_position as double) as previous_value,
        cast(k.position as double) as value,
        cast(null as double) as change_pct,
        cast(null as double) as threshold_pct,
        k.search_volume,
        cast(null as double) as quota_limit,
        cast(null as date) as projected_exhaustion_date,
        cast(null as date) as cycle_end
    from keyword_changes as k
),

domain_history as (
    select
        account,
        domain_id,
        domain,
        snapshot_date,
        visibility,
        estimated_clicks,
        lag(snapshot_date) over by_domain as previous_snapshot_date,
        lag(visibility) over by_domain as previous_visibility,
        lag(estimated_clicks) over by_domain as previous_estimated_clicks
    from domains
    window by_domain as (partition by domain_id order by snapshot_date)
),

domain_measures as (
    select
        account, domain_id, domain, snapshot_date, previous_snapshot_date,
        'visibility_drop' as alert_type, previous_visibility as previous_value, visibility as value
    from domain_history
    union all
    select
        account, domain_id, domain, snapshot_date, previous_snapshot_date,
        'estimated_clicks_drop' as alert_type, previous_estimated_clicks as previous_value,
        estimated_clicks as value
    from domain_history
),

domain_alerts as (
    select
        m.snapshot_date,
        m.account,
        m.alert_type,
        'domain' as subject_kind,
        cast(m.domain_id as varchar) as subject_id,
        m.domain_id,
        m.domain as subject,
        cast(null as varchar) as segment,
        m.previous_snapshot_date,
        cast(m.previous_value as double) as previous_value,
        cast(m.value as double) as value,
        (m.value - m.previous_value) / m.previous_value * 100 as change_pct,
        r.threshold_pct,
        cast(null as bigint) as search_volume,
        cast(null as double) as quota_limit,
        cast(null as date) as projected_exhaustion_date,
        cast(null as date) as cycle_end
    from domain_measures as m
    inner join rules as r
        on r.alert_type = m.alert_type
    where m.previous_snapshot_date >= m.snapshot_date - 31
        and m.previous_value > 0
        and m.value is not null
        and (m.value - m.previous_value) / m.previous_value * 100 < -r.threshold_pct
),

quota_history as (
    select
        q.*,
        p.runs_out_before_reset as previous_runs_out_before_reset,
        p.cycle_start as previous_cycle_start
    from quota as q
    left join quota as p
        on p.account = q.account and p.metric = q.metric and p.snapshot_date = q.previous_snapshot_date
),

-- the first day of a billing cycle on which the metric is projected to run out before its reset
quota_alerts as (
    select
        snapshot_date,
        account,
        'quota_runs_out' as alert_type,
        'quota' as subject_kind,
        metric as subject_id,
        cast(null as varchar) as domain_id,
        metric as subject,
        cast(null as varchar) as segment,
        previous_snapshot_date,
        cast(usage as double) as previous_value,
        -- usage itself when out of quota without a projection (overdue, or no rate yet)
        cast(coalesce(projected_usage_at_cycle_end, usage) as double) as value,
        cast(null as double) as change_pct,
        cast(null as double) as threshold_pct,
        cast(null as bigint) as search_volume,
        cast(quota_limit as double) as quota_limit,
        projected_exhaustion_date,
        cycle_end
    from quota_history
    where runs_out_before_reset
        and not coalesce(previous_runs_out_before_reset and previous_cycle_start is not distinct from cycle_start,
                         false)
),

unioned as (
    select * from keyword_alerts
    union all
    select * from domain_alerts
    union all
    select * from quota_alerts
),

final as (
    select
        u.snapshot_date,
        concat_ws(':', u.alert_type, u.account, u.subject_id, cast(u.snapshot_date as varchar)) as alert_id,
        u.account,
        u.alert_type,
        u.subject_kind,
        u.subject_id,
        u.domain_id,
        d.domain,
        u.subject,
        u.segment,
        u.previous_snapshot_date,
        u.previous_value,
        u.value,
        u.change_pct,
        u.threshold_pct,
        u.search_volume,
        u.quota_limit,
        u.projected_exhaustion_date,
        u.cycle_end
    from unioned as u
    inner join rules as r
        on r.alert_type = u.alert_type and r.enabled
    left join domains as d
        on d.domain_id = u.domain_id and d.snapshot_date = u.snapshot_date
)

select * from final
