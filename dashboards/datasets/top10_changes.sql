-- Keywords entering and leaving the top 10: one row per keyword and snapshot day on which it crossed
-- position 10 against its previous snapshot (within 31 days). Computed from fct_keyword_rankings_daily
-- until the analytics marts carry top-10 entries and exits; repoint this file at that mart then.
select
    account, domain, search_engine, device, location, language_code, snapshot_date,
    keyword_id, keyword, position, previous_position,
    case when coalesce(position, 101) <= 10 then 'entered top 10' else 'left top 10' end as top10_change
from (
    select r.*, f.previous_position, f.previous_snapshot_date
    from ({{ include('keyword_rankings.sql') }}) r
    join marts.fct_keyword_rankings_daily f using (keyword_id, snapshot_date)
) x
where previous_snapshot_date is not null
  and (coalesce(position, 101) <= 10) <> (coalesce(previous_position, 101) <= 10)
