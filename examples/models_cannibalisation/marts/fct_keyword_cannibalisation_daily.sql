-- Keyword cannibalisation: one row per domain x keyword (the words) x snapshot day on which two or more
-- different URLs of the domain rank for the keyword across its tracked variants (search engine, device,
-- location, language): the domain's own pages compete for one query.
with

rankings as (
    select * from marts.fct_keyword_rankings_daily
),

ranking as (
    select account, domain_id, keyword, snapshot_date, position, ranking_url
    from rankings
    where ranking_url is not null
),

per_keyword as (
    select
        account,
        domain_id,
        keyword,
        snapshot_date,
        count(distinct ranking_url) as ranking_urls,
        list_sort(list(distinct ranking_url)) as urls,
        count(*) as ranking_variants,
        min(position) as best_position,
        -- a tie for the best position goes to the first URL in alphabetical order
        first(ranking_url order by position, ranking_url) as best_url,
        max(position) - min(position) as position_spread
    from ranking
    group by account, domain_id, keyword, snapshot_date
)

select * from per_keyword
where ranking_urls > 1
