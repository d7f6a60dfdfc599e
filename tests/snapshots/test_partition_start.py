"""The first daily partition (rank_pipeline.snapshots.partition_start): a setting (the component's
``partition_start``, which ``RANK_PIPELINE_PARTITION_START`` overrides), else the data folder's first committed
snapshot day, else the project's init day, else today; a setting after the first snapshot day is refused; the
definitions' partitions and schedule follow it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pydantic
import pytest

from rank_pipeline.defs.component import RankPipelineComponent, build_definitions
from rank_pipeline.defs.jobs import DAILY_JOB_NAME, DAILY_SCHEDULE_NAME
from rank_pipeline.settings import ConfigurationError, Settings, UserProject
from rank_pipeline.snapshots.partition_start import (
    FIRST_SNAPSHOT,
    INIT_DAY,
    TODAY,
    PartitionStart,
    partition_start,
)
from rank_pipeline.snapshots.schema import DAY_FOLDER_PREFIX, MANIFEST_NAME


def _commit(data: Path, endpoint: str, day: date) -> None:
    """A committed snapshot day as the reader knows one: its day folder holding the manifest."""
    folder = data / "snapshots" / endpoint / f"{DAY_FOLDER_PREFIX}{day}"
    folder.mkdir(parents=True)
    (folder / MANIFEST_NAME).write_text("{}")


def _settings(data: Path, **env: str) -> Settings:
    return Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(data), **env})


def test_the_default_is_the_first_snapshot_day_else_the_init_day_else_today(tmp_path):
    data = tmp_path / "data"
    project = UserProject(tmp_path, tmp_path, started=date(2026, 3, 5))
    assert partition_start(_settings(data), None, today=date(2026, 3, 9)) == PartitionStart(date(2026, 3, 9), TODAY)
    assert partition_start(_settings(data), project) == PartitionStart(date(2026, 3, 5), INIT_DAY)
    (data / "snapshots" / "keywords" / f"{DAY_FOLDER_PREFIX}2026-03-01").mkdir(parents=True)  # never committed
    assert partition_start(_settings(data), project).source == INIT_DAY
    _commit(data, "keywords", date(2026, 3, 7))
    _commit(data, "domains", date(2026, 3, 6))
    assert partition_start(_settings(data), project) == PartitionStart(date(2026, 3, 6), FIRST_SNAPSHOT)


def test_a_setting_may_start_earlier_but_never_after_the_first_snapshot_day(tmp_path):
    data = tmp_path / "data"
    _commit(data, "keywords", date(2026, 3, 6))
    earlier = partition_start(_settings(data, RANK_PIPELINE_PARTITION_START="2026-02-01"))
    assert earlier == PartitionStart(date(2026, 2, 1), "RANK_PIPELINE_PARTITION_START") and earlier.explicit
    with pytest.raises(ConfigurationError) as refused:
        partition_start(_settings(data, RANK_PIPELINE_PARTITION_START="2026-03-07"))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("RANK_PIPELINE_PARTITION_START 2026-03-07 is after 2026-03-06, the first committed "
                              "snapshot day")
    assert "set it to 2026-03-06 or earlier, or remove it" in message


def test_the_environment_overrides_the_components_attribute(tmp_path):
    component = RankPipelineComponent(data_dir="data", partition_start="2026-03-01")
    ops = component.settings(tmp_path, env={}).ops
    assert (ops.partition_start, ops.partition_start_from) == (date(2026, 3, 1), "defs.yaml partition_start")
    ops = component.settings(tmp_path, env={"RANK_PIPELINE_PARTITION_START": "2026-02-01"}).ops
    assert (ops.partition_start, ops.partition_start_from) == (date(2026, 2, 1), "RANK_PIPELINE_PARTITION_START")
    assert RankPipelineComponent().settings(tmp_path, env={}).ops.partition_start is None


def test_a_partition_start_that_is_not_a_date_is_refused_naming_it():
    assert RankPipelineComponent.model_validate({"partition_start": date(2026, 3, 1)}).partition_start == "2026-03-01"
    with pytest.raises(pydantic.ValidationError, match="partition_start '2026-3-1' is not a date"):
        RankPipelineComponent(partition_start="2026-3-1")
    with pytest.raises(ConfigurationError, match="RANK_PIPELINE_PARTITION_START='yesterday' is not a date"):
        Settings.from_env({"RANK_PIPELINE_PARTITION_START": "yesterday"})


def test_the_definitions_partitions_start_on_the_setting_and_the_schedule_skips_days_before(tmp_path):
    now = datetime.now(UTC)  # the partitions are read at this instant, should the test cross midnight
    start = now.date() - timedelta(days=4)
    defs = build_definitions(_settings(tmp_path / "data", RANK_PIPELINE_PARTITION_START=start.isoformat()))
    expected = [(start + timedelta(days=i)).isoformat() for i in range(5)]
    assert defs.resolve_job_def(DAILY_JOB_NAME).partitions_def.get_partition_keys(current_time=now) == expected
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert graph.get(key).partitions_def.get_partition_keys(current_time=now) == expected, key
    schedule = defs.resolve_schedule_def(DAILY_SCHEDULE_NAME)
    before = schedule(dg.build_schedule_context(
        scheduled_execution_time=datetime.combine(start - timedelta(days=1), datetime.min.time(), UTC)))
    assert isinstance(before, dg.SkipReason) and "before the first partition" in (before.skip_message or "")
    on_start = schedule(dg.build_schedule_context(
        scheduled_execution_time=datetime.combine(start, datetime.min.time(), UTC) + timedelta(hours=6)))
    assert isinstance(on_start, dg.RunRequest) and on_start.partition_key == start.isoformat()


def test_a_run_started_before_midnight_keeps_its_day_when_the_definitions_load_after(tmp_path, monkeypatch):
    """``rank-pipeline run`` on a fresh data folder at 23:59:57 UTC: its day is today when the command checks
    it, and the definitions, loaded seconds later, must still hold that day as a partition (CI failed once on
    ``Could not find a partition with key``: their start was the new today)."""
    from rank_pipeline.cli import args
    from rank_pipeline.snapshots import partition_start as start_module

    clock = [datetime(2026, 11, 28, 23, 59, 57, tzinfo=UTC)]
    before, after = clock[0].date(), datetime(2026, 11, 29, 0, 0, 2, tzinfo=UTC)

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return clock[0]

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RANK_PIPELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RANK_PIPELINE_PARTITION_START", "")  # unset; restored after the check sets it
    monkeypatch.setattr(args, "datetime", Clock)
    monkeypatch.setattr(start_module, "datetime", Clock)
    assert args.check_partition(args.today(), Settings.from_env()) == before
    clock[0] = after
    keys = build_definitions(Settings.from_env()).resolve_job_def(DAILY_JOB_NAME).partitions_def.get_partition_keys(
        current_time=after)
    assert keys[0] == before.isoformat() and keys[-1] == after.date().isoformat()
