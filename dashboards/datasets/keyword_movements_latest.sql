-- Winners and losers: keywords the mart flags as winners or losers against the previous calendar day
-- (fct_keyword_rankings_daily.is_winner_1d / is_loser_1d: improved or entered / declined or dropped out),
-- on the latest published snapshot day. position_change_1d > 0 = improved (moved up).
select *
from ({{ include('keyword_rankings.sql') }})
where snapshot_date = (select max(snapshot_date) from marts.fct_keyword_rankings_daily)
  and (is_winner_1d or is_loser_1d)
