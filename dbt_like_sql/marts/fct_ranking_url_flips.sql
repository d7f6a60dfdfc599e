-- One row per keyword per snapshot day for keywords whose ranking URL changed at least once in the
-- 30 days ending that day: a cannibalisation signal.
with

rankings as not materialized (
    select * from marts.fct_keyword_rankings_daily
),

-- only a keyword whose URL changed on some day read here can have a row: the window runs over those
-- keywords alone (a few percent of the rows), not over every keyword-day of the look-back
flipping as (
    select distinct keyword_id
    from rankings
    where url_changed
),

windowed as (
    select
        account,
        domain_id,
        keyword_id,
        snapshot_date,
        keyword,
        search_engine,
        device,
        location_code,
        language_code,
        position,
        ranking_url,
        count(distinct ranking_url) over last_30_days as distinct_urls_30d,
        count(*) filter (where url_changed) over last_30_days as url_changes_30d,
        count(position) over last_30_days as ranking_days_30d,
        count(*) over last_30_days as snapshots_30d
    from rankings
    where keyword_id in (select keyword_id from flipping)
    window last_30_days as (
        partition by keyword_id order by snapshot_date
        range between interval 29 days preceding and current row
    )
),

final as (
    select * from windowed
    where url_changes_30d > 0
)

select * from final
