-- Each domain of the keywords file: its keywords from the file (staging.stg_keywords_file, written by the
-- raw/keywords_file asset from RANK_PIPELINE_KEYWORDS_FILE) against the keywords tracked on the
-- account's latest snapshot day. One row per combination (word, engine, device, location, language):
-- tracked (in both), missing (in the file, not tracked: `rank-pipeline keywords apply` creates it),
-- not_in_file (tracked on a file domain but not in the file: never removed, the API has no delete).
with

planned as (
    select * from staging.stg_keywords_file
),

keywords as not materialized (
    select * from staging.stg_keywords
),

latest_day as (
    select account, max(snapshot_date) as snapshot_date
    from keywords
    group by account
),

file_domains as (
    select account, domain_id, min(domain) as domain
    from planned
    group by account, domain_id
),

tracked as (
    select
        k.account,
        k.domain_id,
        k.keyword_id,
        trim(k.keyword) as keyword,
        lower(k.search_engine) as search_engine,
        lower(k.device) as device,
        k.location_code,
        lower(k.language_code) as language_code,
        k.frequency,
        k.snapshot_date
    from keywords as k
    inner join latest_day as l
        on l.account = k.account and l.snapshot_date = k.snapshot_date
    inner join file_domains as f
        on f.account = k.account and f.domain_id = k.domain_id
),

joined as (
    select
        coalesce(p.account, t.account) as account,
        coalesce(p.domain_id, t.domain_id) as domain_id,
        coalesce(p.keyword, t.keyword) as keyword,
        coalesce(p.search_engine, t.search_engine) as search_engine,
        coalesce(p.device, t.device) as device,
        coalesce(p.location_code, t.location_code) as location_code,
        p.location as file_location,
        coalesce(p.language_code, t.language_code) as language_code,
        p.frequency as file_frequency,
        t.frequency as tracked_frequency,
        p.tags as file_tags,
        p.file,
        p.file_line,
        t.keyword_id,
        t.snapshot_date as tracked_on,
        case
            when p.keyword is null then 'not_in_file'
            when t.keyword_id is null then 'missing'
            else 'tracked'
        end as status
    from planned as p
    full outer join tracked as t
        on t.domain_id = p.domain_id
        and t.keyword = p.keyword
        and t.search_engine = p.search_engine
        and t.device = p.device
        and t.location_code = p.location_code
        and t.language_code = p.language_code
),

final as (
    select
        j.account,
        j.domain_id,
        f.domain,
        j.keyword,
        j.search_engine,
        j.device,
        j.location_code,
        j.file_location,
        j.language_code,
        j.file_frequency,
        j.tracked_frequency,
        j.file_tags,
        j.status,
        j.keyword_id,
        j.tracked_on,
        j.file,
        j.file_line
    from joined as j
    left join file_domains as f
        on f.account = j.account and f.domain_id = j.domain_id
)

select * from final
