-- Winners and losers: keywords whose position changed against the previous calendar day, on the latest
-- published snapshot day. position_change_1d > 0 = improved (moved up); entered / dropped_out have no
-- position change, their movement says it.
select *
from ({{ include('keyword_rankings.sql') }})
where snapshot_date = (select max(snapshot_date) from marts.fct_keyword_rankings_daily)
  and movement_1d in ('improved', 'declined', 'entered', 'dropped_out')
