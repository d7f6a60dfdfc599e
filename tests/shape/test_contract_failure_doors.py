"""What the contract's types and values refuse, through the command line on fresh data folders: a contracted
timestamp receiving text that is no timestamp, a flag receiving a value its map does not hold, and an enum
whose values change case from one day to the next each fail the run with the path and the value named, no
cast error, nothing published (the warehouse of the day before stays as it was)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from test_encodings import _models as edited_models
from test_vendor_shape_doors import cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("vendor_shape"), pytest.mark.timeout(900)]


def _models(root: Path, *edits: tuple[str, str]) -> dict[str, str]:
    """A copy of the shipped models with edits of the contract; the setting that points at it."""
    return {"RANK_PIPELINE_MODELS_DIR": str(edited_models(root, list(edits)))}


def _refused(result, path: str, value: str) -> str:
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    line = next((x for x in out.splitlines() if x.startswith(f"vendor shape: keywords: {path} ")), None)
    assert line is not None, out
    assert "does not decode as declared" in line and value in line, line
    assert "Conversion Error" not in out and "conversion" not in out.lower(), out
    return line


def test_a_timestamp_field_receiving_text_fails_naming_the_path_and_the_value(tmp_path):
    """The contract reads the keyword's creation time where the vendor sends the location's name (and the
    location's name, a string, where it sends the creation time)."""
    models = _models(tmp_path, ("name: created_at, path: createdAt, type: timestamp, shown: false, description: When the k",
                                "name: created_at, path: location.name, type: timestamp, shown: false, description: When the k"),
                     ("name: location_name, path: location.name,", "name: location_name, path: createdAt,"))
    line = _refused(cli("run", data_dir=tmp_path / "data", env=models), "location.name", '"United States" in')
    assert '(a timestamp as "iso8601")' in line
    assert not (tmp_path / "data" / "warehouse.duckdb").exists()


def test_a_flag_receiving_an_unmapped_value_fails_naming_the_path_and_the_value(tmp_path):
    """vendor-e sends the device as ``mobile: "yes" | "no"``; a map that holds ``"yes"`` and ``"n"`` leaves
    ``"no"`` unmapped."""
    models = _models(tmp_path, ("name: device, path: device, type: string, shown: false, values: [desktop, mobile],",
                                'name: device, path: mobile, type: string, shown: false, values: {"yes": mobile, "n": desktop},'))
    line = _refused(cli("run", data_dir=tmp_path / "data", env={"RANK_SANDBOX_SHAPE": "vendor-e", **models}),
                    "mobile", '"no" in')
    assert '"yes" -> "mobile", "n" -> "desktop"' in line
    assert not (tmp_path / "data" / "warehouse.duckdb").exists()


def test_an_enum_whose_values_change_case_overnight_fails_and_the_day_before_stays_published(tmp_path):
    today = datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    data = tmp_path / "data"
    shape = {"RANK_SANDBOX_SHAPE": f"engine-upper@{today}"}
    first = cli("run", "--date", str(yesterday), data_dir=data, env=shape)
    assert first.returncode == 0, first.stdout + first.stderr
    warehouse = data / "warehouse.duckdb"
    before = warehouse.read_bytes()

    second = cli("run", "--date", str(today), data_dir=data, env=shape)
    line = _refused(second, "searchEngine", '"GOOGLE" in')
    assert 'one of "google", "bing", "yahoo"' in line and "fold_case: true" in line and "%" in line
    assert warehouse.read_bytes() == before  # nothing published
    with duckdb.connect(str(warehouse), read_only=True) as con:
        engines = {r[0] for r in con.execute("select distinct search_engine from marts.dim_keywords").fetchall()}
    assert engines and engines <= {"google", "bing", "yahoo"}
