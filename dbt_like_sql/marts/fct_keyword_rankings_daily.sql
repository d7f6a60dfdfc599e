-- One row per keyword per snapshot day: position, its bucket, estimated clicks, and the comparison with
-- the keyword's snapshots 1, 7 and 30 calendar days earlier and with its previous available snapshot
-- (movement label, change, winner / loser flags, top 3 / top 10 entries and exits). Every position rule
-- of the project is written here once, per keyword-day; the aggregates only count these columns.
-- Incremental: every column depends only on the last 31 days.
with

keywords as (
    select * from staging.stg_keywords
),

rules as (
    select * from seeds.movement_rules
),

ctr_curve as (
    select * from seeds.ctr_curve
),

current_curve as (
    select * from ctr_curve
    where curve_version = (select max(curve_version) from ctr_curve)
),

ctr_at_position_1 as (
    select curve_version, ctr as ctr_position_1
    from current_curve
    where position = 1
),

-- the comparison side: four narrow columns (the wide rows are read only for the days built)
history as not materialized (
    select
        keyword_id,
        snapshot_date,
        position,
        ranking_url
    from staging.stg_keywords
),

calendar as (
    select
        k.account,
        k.domain_id,
        k.keyword_id,
        k.snapshot_date,
        k.keyword,
        k.search_engine,
        k.device,
        k.location_code,
        k.language_code,
        k.search_volume,
        k.position,
        k.ranking_url,
        d1.snapshot_date is not null as has_snapshot_1d_ago,
        d1.position as position_1d_ago,
        d1.ranking_url as ranking_url_1d_ago,
        d7.snapshot_date is not null as has_snapshot_7d_ago,
        d7.position as position_7d_ago,
        d30.snapshot_date is not null as has_snapshot_30d_ago,
        d30.position as position_30d_ago
    from keywords as k
    left join staging.stg_keywords as d1
        on d1.snapshot_date = k.snapshot_date - 1 and d1.keyword_id = k.keyword_id
    left join staging.stg_keywords as d7
        on d7.snapshot_date = k.snapshot_date - 7 and d7.keyword_id = k.keyword_id
    left join staging.stg_keywords as d30
        on d30.snapshot_date = k.snapshot_date - 30 and d30.keyword_id = k.keyword_id
),

-- keywords with a missing day between their first and last snapshot read here: only for them can the
-- previous available snapshot be other than the day before, so only their rows are searched back
with_gaps as (
    select keyword_id
    from history
    group by keyword_id
    having count(*) < date_diff('day', min(snapshot_date), max(snapshot_date)) + 1
),

previous_after_gap as (
    select
        keyword_id,
        snapshot_date,
        lag(snapshot_date) over by_keyword as previous_snapshot_date,
        lag(position) over by_keyword as previous_position,
        lag(ranking_url) over by_keyword as previous_ranking_url
    from history
    where keyword_id in (select keyword_id from with_gaps)
    window by_keyword as (partition by keyword_id order by snapshot_date)
),

compared as (
    select
        c.*,
        -- the previous snapshot counts only within 31 days, so a full rebuild equals the incremental one
        case
            when c.has_snapshot_1d_ago then c.snapshot_date - 1
            when p.previous_snapshot_date >= c.snapshot_date - 31 then p.previous_snapshot_date
        end as previous_snapshot_date,
        case
            when c.has_snapshot_1d_ago then c.position_1d_ago
            when p.previous_snapshot_date >= c.snapshot_date - 31 then p.previous_position
        end as previous_position,
        case
            when c.has_snapshot_1d_ago then c.ranking_url_1d_ago
            when p.previous_snapshot_date >= c.snapshot_date - 31 then p.previous_ranking_url
        end as previous_ranking_url
    from calendar as c
    left join previous_after_gap as p
        on p.keyword_id = c.keyword_id and p.snapshot_date = c.snapshot_date
),

-- the four horizons of each keyword-day as a list: [1d, 7d, 30d, previous]
horizons as (
    select
        c.*,
        [
            {'comparable': c.has_snapshot_1d_ago, 'then_position': c.position_1d_ago},
            {'comparable': c.has_snapshot_7d_ago, 'then_position': c.position_7d_ago},
            {'comparable': c.has_snapshot_30d_ago, 'then_position': c.position_30d_ago},
            {'comparable': c.previous_snapshot_date is not null, 'then_position': c.previous_position}
        ] as earlier
    from compared as c
),

-- the movement rules, written once and applied to every horizon
labelled as (
    select
        h.* exclude (earlier),
        list_transform(h.earlier, lambda e: {
            'comparable': e.comparable,
            'then_position': e.then_position,
            'position_change': e.then_position - h.position,
            'movement': case
                when not e.comparable then 'new'
                when h.position is null and e.then_position is null then 'not_ranking'
                when e.then_position is null then 'entered'
                when h.position is null then 'dropped_out'
                when h.position < e.then_position then 'improved'
                when h.position > e.then_position then 'declined'
                else 'unchanged'
            end,
            'penalised_change': case when e.comparable then
                coalesce(e.then_position, r.not_ranking_position) - coalesce(h.position, r.not_ranking_position)
            end
        }) as compared_to
    from horizons as h
    cross join rules as r
),

flagged as (
    select
        l.* exclude (compared_to),
        list_transform(l.compared_to, lambda x: {
            'position_change': x.position_change,
            'movement': x.movement,
            'is_winner': x.movement in ('improved', 'entered'),
            'is_loser': x.movement in ('declined', 'dropped_out'),
            'is_significant_winner': x.comparable and x.penalised_change >= r.significant_move_positions,
            'is_significant_loser': x.comparable and x.penalised_change <= -r.significant_move_positions,
            'entered_top_3': case when x.comparable then
                coalesce(l.position <= 3, false) and not coalesce(x.then_position <= 3, false) end,
            'exited_top_3': case when x.comparable then
                coalesce(x.then_position <= 3, false) and not coalesce(l.position <= 3, false) end,
            'entered_top_10': case when x.comparable then
                coalesce(l.position <= 10, false) and not coalesce(x.then_position <= 10, false) end,
            'exited_top_10': case when x.comparable then
                coalesce(x.then_position <= 10, false) and not coalesce(l.position <= 10, false) end
        }) as h
    from labelled as l
    cross join rules as r
),

scored as (
    select
        cmp.*,
        coalesce(c.ctr, 0) as estimated_ctr,
        c1.ctr_position_1,
        c1.curve_version as ctr_curve_version,
        r.not_ranking_position
    from flagged as cmp
    cross join ctr_at_position_1 as c1
    cross join rules as r
    left join current_curve as c
        on c.position = cmp.position
),

final as (
    select
        s.account,
        s.domain_id,
        s.keyword_id,
        s.snapshot_date,
        s.keyword,
        s.search_engine,
        s.device,
        s.location_code,
        s.language_code,
        s.search_volume,
        s.position,
        s.position is not null as is_ranking,
        coalesce(s.position, s.not_ranking_position) as penalised_position,
        case
            when s.position is null then 'not_ranking'
            when s.position <= 3 then '1-3'
            when s.position <= 10 then '4-10'
            when s.position <= 20 then '11-20'
            when s.position <= 50 then '21-50'
            else '51-100'
        end as position_bucket,
        s.ranking_url,
        s.previous_snapshot_date,
        date_diff('day', s.previous_snapshot_date, s.snapshot_date) as days_since_previous,
        s.previous_position,
        s.previous_ranking_url,
        case
            when s.previous_ranking_url is null or s.ranking_url is null then null
            else s.ranking_url <> s.previous_ranking_url
        end as url_changed,
        s.position_1d_ago,
        s.h[1].position_change as position_change_1d,
        s.h[1].movement as movement_1d,
        s.h[1].is_winner as is_winner_1d,
        s.h[1].is_loser as is_loser_1d,
        s.h[1].is_significant_winner as is_significant_winner_1d,
        s.h[1].is_significant_loser as is_significant_loser_1d,
        s.position_7d_ago,
        s.h[2].position_change as position_change_7d,
        s.h[2].movement as movement_7d,
        s.h[2].is_winner as is_winner_7d,
        s.h[2].is_loser as is_loser_7d,
        s.h[2].is_significant_winner as is_significant_winner_7d,
        s.h[2].is_significant_loser as is_significant_loser_7d,
        s.position_30d_ago,
        s.h[3].position_change as position_change_30d,
        s.h[3].movement as movement_30d,
        s.h[3].is_winner as is_winner_30d,
        s.h[3].is_loser as is_loser_30d,
        s.h[3].is_significant_winner as is_significant_winner_30d,
        s.h[3].is_significant_loser as is_significant_loser_30d,
        s.h[4].position_change as position_change_previous,
        s.h[4].movement as movement_previous,
        s.h[4].is_winner as is_winner_previous,
        s.h[4].is_loser as is_loser_previous,
        s.h[4].is_significant_winner as is_significant_winner_previous,
        s.h[4].is_significant_loser as is_significant_loser_previous,
        s.h[4].entered_top_3 as entered_top_3,
        s.h[4].exited_top_3 as exited_top_3,
        s.h[4].entered_top_10 as entered_top_10,
        s.h[4].exited_top_10 as exited_top_10,
        s.estimated_ctr,
        s.estimated_ctr / s.ctr_position_1 * 100 as visibility_score,
        s.estimated_ctr * s.search_volume as estimated_clicks,
        s.ctr_curve_version
    from scored as s
)

select * from final
