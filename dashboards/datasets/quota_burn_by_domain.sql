-- Which domains burn the keyword quota: keyword records added per domain and day
-- (marts.agg_quota_burn_by_domain).
select
    b.account,
    coalesce(b.domain, d.domain, b.domain_id) as domain,
    b.snapshot_date,
    b.keywords_added,
    b.keywords_removed,
    b.net_keywords_change,
    b.keywords_tracked,
    b.share_of_account_added_pct
from marts.agg_quota_burn_by_domain b
left join marts.dim_domains d on d.domain_id = b.domain_id
