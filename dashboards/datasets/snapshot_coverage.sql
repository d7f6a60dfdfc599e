-- Data health: one row per account x calendar day from the account's first snapshot day to the latest
-- (marts.fct_account_snapshot_coverage_daily, days never extracted included). covered = the day has the
-- account's snapshot; complete = the mart's is_complete (domain list not empty, every listed domain has
-- keyword rows); domains_with_keywords_pct = listed domains with keyword rows, in % of those listed.
select
    account,
    snapshot_date,
    has_snapshot as covered,
    coalesce(is_complete, false) as complete,
    domains_listed,
    domains_with_keywords,
    round(100.0 * domains_with_keywords / nullif(domains_listed, 0), 1) as domains_with_keywords_pct,
    keyword_rows,
    competitor_rows,
    tag_rows,
    days_since_previous_snapshot,
    previous_day_missing
from marts.fct_account_snapshot_coverage_daily
