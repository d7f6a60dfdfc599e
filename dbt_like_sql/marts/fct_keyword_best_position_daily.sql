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
        min(position) over (
            partition by keyword_id order by snapshot_date
            rows between unbounded preceding and current row
        ) as best_position_to_date,
        min(position) over (
            partition by keyword_id order by snapshot_date
            rows between unbounded preceding and 1 preceding
        ) as best_position_before
    from keywords
),

new_bests as (
    select
        *,
        position is not null
            and (best_position_before is null or position < best_position_before) as is_new_best
    from running_best
),

final as (
    select
        account,
        domain_id,
        keyword_id,
        snapshot_date,
        position,
        best_position_to_date,
        max(case when is_new_best then snapshot_date end) over (
            partition by keyword_id order by snapshot_date
            rows between unbounded preceding and current row
        ) as best_position_first_date,
        is_new_best
    from new_bests
)

select * from final
