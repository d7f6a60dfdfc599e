-- quota_daily.sql on each account's latest snapshot day: projected exhaustion against the reset.
select *
from ({{ include('quota_daily.sql') }}) q
where snapshot_date = (select max(snapshot_date) from marts.fct_quota_cycle_daily f where f.account = q.account)
