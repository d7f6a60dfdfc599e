"""One error hierarchy: every exception class of the package derives from ``RankPipelineError``, and each
documented exit status is reached through the ``rank-pipeline`` command as a user runs it.

Exit status 3 (the data folder cannot be written) needs a file system the test can fill or remount: it is
driven through the command in ``tests/operations/test_data_folder_faults.py`` (root).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from support import command_env, rank_pipeline, rank_pipeline_argv

from rank_pipeline.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    RankPipelineError,
    exception_classes,
)
from rank_pipeline.warehouse.errors import LoadError

ROOT = Path(__file__).resolve().parents[1]


def test_every_exception_class_of_the_package_derives_from_the_one_root():
    classes = exception_classes()
    # the walk sees the classes it must see: a guard against a walk that finds nothing and passes
    for name in ("rank_pipeline.api.errors.RankTrackerError", "rank_pipeline.warehouse.errors.LoadError",
                 "rank_pipeline.settings.ConfigurationError", "rank_pipeline.transform.errors.ProjectError",
                 "rank_pipeline.cli.errors.UsageError", "rank_pipeline.sandbox.world.errors.QuotaExceeded"):
        assert name in classes, sorted(classes)
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, RankPipelineError))
    assert outside == [], f"exception classes outside rank_pipeline.errors.RankPipelineError: {outside}"
    statuses = {cls.exit_status for cls in classes.values() if issubclass(cls, RankPipelineError)}
    assert statuses <= {EXIT_FAILED, EXIT_USAGE}, statuses


def test_one_line_is_the_first_line_and_the_hint_once():
    class Hinted(RankPipelineError):
        hint = "set RANK_PIPELINE_X"

    assert Hinted("bad X\nthe detail").one_line() == "bad X; set RANK_PIPELINE_X"
    assert Hinted("bad X: set RANK_PIPELINE_X").one_line() == "bad X: set RANK_PIPELINE_X"
    assert RankPipelineError("").one_line() == "RankPipelineError"


_cli = functools.partial(rank_pipeline, timeout=600)
"""``rank-pipeline *args`` on ``data_dir`` with a clean environment plus ``env`` (:func:`support.rank_pipeline`),
killed past 600 s."""


def _error_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, done.stderr
    assert "unexpected" not in lines[0] and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> Path:
    """A data folder with one day extracted from the embedded sandbox: exit status 0."""
    data = tmp_path_factory.mktemp("errors") / "data"
    done = _cli("extract", data_dir=data)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    return data


@pytest.mark.slow
def test_exit_1_a_damaged_snapshot_in_rebuild_is_its_load_error_not_unexpected(extracted, tmp_path):
    """A ``LoadError`` during ``rebuild`` (a manifest whose row count the files do not hold) ends with exit
    status 1 and the error's own line, naming the partition and what to do; before the one root it fell to
    the catch-all as "unexpected LoadError"."""
    data = tmp_path / "data"
    shutil.copytree(extracted, data)
    (manifest,) = (data / "snapshots" / "tags").glob("snapshot_date=*/_manifest*.json")
    body = json.loads(manifest.read_text())
    body["row_count"] += 1
    manifest.write_text(json.dumps(body))
    done = _cli("rebuild", data_dir=data)
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    line = _error_line(done)
    assert issubclass(LoadError, RankPipelineError)
    assert "of raw.tags" in line and f"manifest says {body['row_count']}" in line and "Re-extract tags" in line, line
    assert not (data / "warehouse.duckdb").exists()  # nothing published


@pytest.mark.slow
def test_exit_1_a_missing_snapshot_file_is_named_by_the_shape_check(extracted, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(extracted, data)
    gone = sorted((data / "snapshots" / "keywords").rglob("*.parquet"))[0]
    gone.unlink()
    done = _cli("rebuild", data_dir=data)
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    line = _error_line(done)
    assert f"{gone} is listed in its manifest but cannot be read" in line and "re-extract keywords" in line, line


def test_exit_2_a_setting_that_is_wrong(tmp_path):
    done = _cli("rebuild", data_dir=tmp_path / "data", env={"RANK_PIPELINE_MODELS_DIR": str(tmp_path / "nowhere")})
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    assert _error_line(done).startswith(f"error: RANK_PIPELINE_MODELS_DIR='{tmp_path / 'nowhere'}' is not a folder")


def test_exit_2_a_data_folder_under_a_file(tmp_path):
    """A data folder whose path runs through a regular file could never be created: one line, not an
    "unexpected NotADirectoryError"."""
    (tmp_path / "afile").write_text("")
    done = _cli("extract", data_dir=tmp_path / "afile" / "data")
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    assert _error_line(done) == (f"error: the data folder {tmp_path / 'afile' / 'data'} cannot be created: "
                                 f"{tmp_path / 'afile'} is a file; set RANK_PIPELINE_DATA_DIR to a folder "
                                 "(it is created if missing)")


def test_exit_2_a_broken_models_folder_is_one_line_and_a_count(tmp_path):
    models = tmp_path / "models"
    shutil.copytree(ROOT / "dbt_like_sql", models)
    broken = sorted((models / "marts").glob("*.yml"))[0]
    broken.write_text(broken.read_text() + "  - [unclosed\n")
    done = _cli("test", "--unit", "--models-dir", str(models), data_dir=tmp_path / "data")
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    line = _error_line(done)
    assert line.startswith(f"error: {broken}: not valid YAML") and "more line(s) of detail" in line, line


def test_exit_130_interrupted(tmp_path):
    env = command_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path / "data")})
    proc = subprocess.Popen([*rank_pipeline_argv(), "sandbox", "--port", "0"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stdout.readline()
        match = re.search(r"rank-tracking sandbox on http://127\.0\.0\.1:(\d+) ", banner)
        assert match and int(match.group(1)) > 0, banner  # --port 0: the banner names the port it bound
        deadline = time.monotonic() + 30
        while True:  # the server answers on that port
            try:
                socket.create_connection(("127.0.0.1", int(match.group(1))), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the sandbox never listened on the port it printed"
                time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "error: interrupted" in err
