-- Grain: one row per domain x ranking URL (landing page) x snapshot day: keywords ranking with the URL,
-- their average position and estimated clicks, and the keywords the URL gained and lost against each
-- keyword's previous snapshot. Counts columns of fct_keyword_rankings_daily.
with

rankings as not materialized (
    select * from marts.fct_keyword_rankings_daily
),

current_url as (
    select
        account,
        domain_id,
        ranking_url,
        snapshot_date,
        count(*) as ranking_keywords,
        avg(position) as average_position,
        min(position) as best_position,
        sum(estimated_clicks) as estimated_clicks,
        count(*) filter (
            where previous_snapshot_date is not null and ranking_url is distinct from previous_ranking_url
        ) as keywords_gained
    from rankings
    where ranking_url is not null
    group by account, domain_id, ranking_url, snapshot_date
),

previous_url as (
    select
        account,
        domain_id,
        previous_ranking_url as ranking_url,
        snapshot_date,
        count(*) as keywords_lost
    from rankings
    where previous_ranking_url is not null and ranking_url is distinct from previous_ranking_url
    group by account, domain_id, previous_ranking_url, snapshot_date
),

final as (
    select
        coalesce(c.account, p.account) as account,
        coalesce(c.domain_id, p.domain_id) as domain_id,
        coalesce(c.ranking_url, p.ranking_url) as ranking_url,
        coalesce(c.snapshot_date, p.snapshot_date) as snapshot_date,
        coalesce(c.ranking_keywords, 0) as ranking_keywords,
        c.average_position,
        c.best_position,
        coalesce(c.estimated_clicks, 0) as estimated_clicks,
        coalesce(c.keywords_gained, 0) as keywords_gained,
        coalesce(p.keywords_lost, 0) as keywords_lost
    from current_url as c
    full outer join previous_url as p
        on p.domain_id = c.domain_id and p.ranking_url = c.ranking_url and p.snapshot_date = c.snapshot_date
)

select * from final
