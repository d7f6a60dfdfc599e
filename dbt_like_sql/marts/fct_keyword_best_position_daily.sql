-- One row per keyword per snapshot day: the best (lowest) position the keyword has reached up to and
-- including that day. Incremental with a running state: a build of the days a..b reads the keywords of
-- a..b and, from this model's own rows before a, the best position reached so far (the runner hands
-- those rows in as marts.fct_keyword_best_position_daily; in a full build that relation is empty).
with

keywords as (
    select * from staging.stg_keywords
),

previous_bests as (
    -- the model's own rows before the build range that set a new best: their minimum is the best so far
    select
        keyword_id,
        -- (position, day) packed into one sortable number: its minimum is the best position and the
        -- first day it was reached
        min(cast(best_position_to_date as bigint) * 1000000 + date_diff('day', date '2000-01-01', best_position_first_date))
            as best_position_key
    from marts.fct_keyword_best_position_daily
    where is_new_best
    group by keyword_id
),

running_best as (
    select
        k.account,
        k.domain_id,
        k.keyword_id,
        k.snapshot_date,
        k.position,
        -- least() skips nulls: the best of the carried state and the range's running minimum
        least(
            p.best_position_key,
            min(cast(k.position as bigint) * 1000000 + date_diff('day', date '2000-01-01', k.snapshot_date)) over to_date
        ) as best_position_key
    from keywords as k
    left join previous_bests as p
        on p.keyword_id = k.keyword_id
    window to_date as (
        partition by k.keyword_id order by k.snapshot_date
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
        cast(best_position_key // 1000000 as integer) as best_position_to_date,
        date '2000-01-01' + cast(best_position_key % 1000000 as integer) as best_position_first_date,
        -- the current best was first reached today: today is better than every earlier snapshot
        coalesce(date '2000-01-01' + cast(best_position_key % 1000000 as integer) = snapshot_date, false)
            as is_new_best
    from running_best
)

select * from final
