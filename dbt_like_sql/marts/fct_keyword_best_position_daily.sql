-- One row per keyword per snapshot day: the best (lowest) position the keyword has reached up to and
-- including that day. Needs the whole history, so it is a full-rebuild table, not incremental.
with

keywords as (
    select * from staging.stg_keywords
),

running_best as (
    select
        account,
        domain_id,
        keyword_id,
        snapshot_date,
        position,
        min(position) over to_date as best_position_to_date,
        -- (position, day) packed into one sortable number: its running minimum is the best position
        -- and the first day it was reached, in the same single pass over the keyword's history
        min(cast(position as bigint) * 1000000 + (snapshot_date - date '2000-01-01')) over to_date as best_position_key
    from keywords
    window to_date as (
        partition by keyword_id order by snapshot_date
        rows between unbounded preceding and current row
    )
),

final as (
    select
        account,
        domain_id,
        keyword_id,
        snapshot_date,
        position,
        best_position_to_date,
        date '2000-01-01' + cast(best_position_key % 1000000 as integer) as best_position_first_date,
        -- the current best was first reached today: today is better than every earlier snapshot
        coalesce(date '2000-01-01' + cast(best_position_key % 1000000 as integer) = snapshot_date, false)
            as is_new_best
    from running_best
)

select * from final
