"""The quota's edge histories: one sandbox World whose accounts each hold one edge of a billing cycle.

Imported as ``quota_edges`` by tests/transform/conftest.py (the ``quota_edges`` fixture builds the
warehouse) and by the tests. The World's own reset schedule (``AccountSpec.data_row_resets``, read back
through ``World.data_row_cycle_start``) is the ground truth of every cycle the marts infer.

=========== ========================================================================================
account     edge
=========== ========================================================================================
irregular   dataRows reset on 03-01, 03-14, 03-30, 04-14: cycles of 13, 16 and 15 days; after one
            13-day cycle the reset is expected on 03-27 and comes 3 days late (overdue 03-27..03-29)
changed     14-day cycles (resets 03-03, 03-17, 03-31), then a 21-day one (04-21): a change of cadence,
            overdue 04-14..04-20 first (and 03-01..03-02, the assumed calendar month's reset not come)
raised      resets on 02-20 (before the history), 03-01 and 04-01; the data-row allowance runs out on
            :data:`RUN_OUT_DAY` and is raised tenfold on :data:`RAISE_DAY`, mid-cycle
cleanup     calendar-month resets; :data:`CLEANUP_SHARE` of the account's keywords deleted on
            :data:`CLEANUP_DAY` (the stock falls by more than half: not a reset)
neverseen   resets on 2026-01-10 and 2026-06-01, outside the history: no reset is ever seen; the
            calendar month assumed from the first snapshot is overdue from 03-01, and the allowance
            runs out on :data:`NEVERSEEN_RUN_OUT_DAY` while overdue
=========== ========================================================================================
"""

from __future__ import annotations

from datetime import date, timedelta

from rank_pipeline.sandbox import AccountSpec, LimitChange, World, WorldConfig

ONE = timedelta(days=1)
FIRST_DAY = date(2026, 2, 25)
N_DAYS = 59
DAYS: list[date] = [FIRST_DAY + i * ONE for i in range(N_DAYS)]
"""2026-02-25 .. 2026-04-24, every day."""
LAST_DAY = DAYS[-1]

IRREGULAR_RESETS = (date(2026, 2, 1), date(2026, 3, 1), date(2026, 3, 14), date(2026, 3, 30), date(2026, 4, 14))
CHANGED_RESETS = (date(2026, 2, 17), date(2026, 3, 3), date(2026, 3, 17), date(2026, 3, 31), date(2026, 4, 21))
NEVERSEEN_RESETS = (date(2026, 1, 10), date(2026, 6, 1))
RAISED_RESETS = (date(2026, 2, 20), date(2026, 3, 1), date(2026, 4, 1))
"""A short February cycle, so that the allowance used up on :data:`RUN_OUT_DAY` holds February's usage."""
RUN_OUT_DAY = date(2026, 3, 15)
RAISE_DAY = date(2026, 3, 18)
CLEANUP_DAY = date(2026, 3, 20)
CLEANUP_SHARE = 0.7
NEVERSEEN_RUN_OUT_DAY = date(2026, 4, 10)

OVERDUE_DAYS: dict[str, set[date]] = {
    "irregular": {date(2026, 3, 27), date(2026, 3, 28), date(2026, 3, 29)},
    # the calendar month assumed from 02-25 (February) ends with no reset on 03-01: the first is seen on 03-03
    "changed": {date(2026, 3, 1), date(2026, 3, 2)} | {date(2026, 4, 14) + i * ONE for i in range(7)},
    "raised": set(),
    "cleanup": set(),
    "neverseen": {d for d in DAYS if d >= date(2026, 3, 1)},
}
"""The dataRows days each account's reset is overdue, worked out by hand from the schedules above and the
cadence rules of fct_quota_cycle_daily.yml (the keyword stock has no cycle, so it is never overdue)."""

_SEED = 13
_START = date(2025, 11, 20)


def _config(raised_rows: int, neverseen_rows: int) -> WorldConfig:
    small = {"domains": 2, "keywords_per_domain": (10, 20), "keyword_limit": 5_000}
    return WorldConfig(
        seed=_SEED,
        start_date=_START,
        accounts=(
            AccountSpec("irregular", data_row_limit=40_000, data_row_resets=IRREGULAR_RESETS, **small),
            AccountSpec("changed", data_row_limit=40_000, data_row_resets=CHANGED_RESETS, **small),
            AccountSpec("raised", data_row_limit=raised_rows, data_row_resets=RAISED_RESETS, **small,
                        limit_change=LimitChange(RAISE_DAY, 5_000, 10 * raised_rows)),
            AccountSpec("cleanup", data_row_limit=40_000, **small),
            AccountSpec("neverseen", data_row_limit=neverseen_rows, data_row_resets=NEVERSEEN_RESETS, **small),
        ),
    )


def make_edge_world() -> World:
    """The edge World: limits tuned on a probe World (limits change no keyword) so that ``raised`` runs out
    on :data:`RUN_OUT_DAY` and ``neverseen`` on :data:`NEVERSEEN_RUN_OUT_DAY`; ``cleanup``'s keywords
    deleted on :data:`CLEANUP_DAY`; the clock at the history's last day."""
    probe = World(_config(10**9, 10**9), today=LAST_DAY)

    def rows(name: str, day: date) -> int:
        return probe.usage(probe.account(name).account_id, day)["attributes"]["dataRows"]["usage"]

    world = World(_config(rows("raised", RUN_OUT_DAY), rows("neverseen", NEVERSEEN_RUN_OUT_DAY)),
                  today=CLEANUP_DAY)
    cleanup = world.account("cleanup")
    ids = [(d["id"], k) for d in world.domains(cleanup.account_id, CLEANUP_DAY)
           for k in world.keyword_ids(d["id"], CLEANUP_DAY)]
    for domain_id, keyword_id in ids[: int(len(ids) * CLEANUP_SHARE)]:
        assert world.delete_keyword(domain_id, keyword_id)
    world.set_today(LAST_DAY)
    return world


def world_resets(world: World, account: str) -> list[date]:
    """The days the account's data-row cycle started, from the World: every day of the history (and the
    62 days before it) whose cycle start is that day."""
    account_id = world.account(account).account_id
    span = [FIRST_DAY - i * ONE for i in range(90, 0, -1)] + DAYS
    return sorted({world.data_row_cycle_start(account_id, d) for d in span})
