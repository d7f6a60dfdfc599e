-- A keyword's ranking URL changes: snapshot days on which the ranking URL differs from the previous
-- snapshot's (both ranking), from fct_keyword_rankings_daily.url_changed.
select *
from ({{ include('keyword_rankings.sql') }})
where url_changed
