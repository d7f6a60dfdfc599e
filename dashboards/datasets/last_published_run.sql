-- Data health: the last load that reached the published warehouse, per account: the newest snapshot
-- day and when it was loaded (raw.*.loaded_at, the load transaction's start, UTC).
select
    account,
    max(snapshot_date) as last_snapshot_date,
    max(loaded_at) as last_loaded_at,
    max(extracted_at) as last_extracted_at,
    count(distinct snapshot_date) as snapshot_days
from raw.keywords
group by all
