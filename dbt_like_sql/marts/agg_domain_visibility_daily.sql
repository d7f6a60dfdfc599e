-- One row per domain x search engine x device x location x language x snapshot day: ranking
-- distribution, average positions, CTR-weighted visibility, winners and losers.
with

rankings as (
    select * from marts.fct_keyword_rankings_daily
),

domains as (
    select * from staging.stg_domains
),

aggregated as (
    select
        account,
        domain_id,
        search_engine,
        device,
        location_code,
        language_code,
        snapshot_date,
        count(*) as tracked_keywords,
        count(position) as ranking_keywords,
        avg(position) as average_position,
        avg(coalesce(position, 101)) as penalised_average_position,
        count(*) filter (where position between 1 and 3) as keywords_position_1_3,
        count(*) filter (where position between 4 and 10) as keywords_position_4_10,
        count(*) filter (where position between 11 and 20) as keywords_position_11_20,
        count(*) filter (where position between 21 and 50) as keywords_position_21_50,
        count(*) filter (where position between 51 and 100) as keywords_position_51_100,
        count(*) filter (where position is null) as keywords_not_ranking,
        avg(visibility_score) as visibility,
        sum(visibility_score * search_volume) / nullif(sum(search_volume), 0) as volume_weighted_visibility,
        any_value(ctr_curve_version) as ctr_curve_version,
        count(*) filter (where movement_1d in ('improved', 'entered')) as winners_1d,
        count(*) filter (where movement_1d in ('declined', 'dropped_out')) as losers_1d,
        count(*) filter (where movement_7d in ('improved', 'entered')) as winners_7d,
        count(*) filter (where movement_7d in ('declined', 'dropped_out')) as losers_7d,
        count(*) filter (where movement_30d in ('improved', 'entered')) as winners_30d,
        count(*) filter (where movement_30d in ('declined', 'dropped_out')) as losers_30d
    from rankings
    group by account, domain_id, search_engine, device, location_code, language_code, snapshot_date
),

final as (
    select
        a.account,
        a.domain_id,
        d.domain,
        a.search_engine,
        a.device,
        a.location_code,
        a.language_code,
        a.snapshot_date,
        a.tracked_keywords,
        a.ranking_keywords,
        a.average_position,
        a.penalised_average_position,
        a.keywords_position_1_3,
        a.keywords_position_4_10,
        a.keywords_position_11_20,
        a.keywords_position_21_50,
        a.keywords_position_51_100,
        a.keywords_not_ranking,
        a.visibility,
        a.volume_weighted_visibility,
        a.ctr_curve_version,
        a.winners_1d,
        a.losers_1d,
        a.winners_7d,
        a.losers_7d,
        a.winners_30d,
        a.losers_30d
    from aggregated as a
    left join domains as d
        on d.domain_id = a.domain_id and d.snapshot_date = a.snapshot_date
)

select * from final
