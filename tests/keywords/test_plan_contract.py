"""``keywords plan`` reads a record's fields through the vendor's contract by name: after the vendor renames its
usage object and the contract is remapped (an edit of ``sources/vendor_contract.yml`` alone), the quota forecast
shows the account's keywords and data rows remaining as numbers, not "unknown". Ground truth: the sandbox's
``World``; the door: ``rank-pipeline keywords plan --offline`` in a subprocess, settings in the environment."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import textwrap
from datetime import date
from pathlib import Path

import httpx
import pytest
from support import rank_pipeline
from test_keywords import FILE  # two words on two engines and two locations of domain acme-shop.net

from rank_pipeline.extract.day import AccountSource, extract_day
from rank_pipeline.keywords.quota import read_quota
from rank_pipeline.sandbox import World, create_app
from rank_pipeline.settings import models_dir
from rank_pipeline.snapshots.reader import read_snapshot
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.transform.contract import CONTRACT_FILE, load_contract

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("keywords")]

DAY = date(2026, 11, 21)
RENAMED = {"keywords": "keywordQuota", "dataRows": "rowQuota"}
"""The vendor's new names of the usage object's two parts."""


def _renamed(attributes: dict) -> dict:
    return {RENAMED.get(k, k): v for k, v in attributes.items()}


def _remapped_models(dest: Path) -> Path:
    """The shipped models with the contract's usage paths moved to :data:`RENAMED` (the contract's edit alone)."""
    shutil.copytree(models_dir(), dest)
    contract = dest / CONTRACT_FILE
    text = contract.read_text()
    for old, new in RENAMED.items():
        assert text.count(f"path: {old}.") == 3
        text = text.replace(f"path: {old}.", f"path: {new}.")
    contract.write_text(text)
    return dest


@pytest.fixture(scope="module")
def vendor(tmp_path_factory):
    """A day extracted from the sandbox, its usage records then renamed as the vendor now sends them; the world."""
    root = tmp_path_factory.mktemp("renamed_usage")
    world = World(today=DAY)
    sources = [AccountSource(a.name, a.api_key) for a in world.accounts if a.api_enabled]
    transport = httpx.ASGITransport(app=create_app(world))
    asyncio.run(extract_day("http://127.0.0.1", sources, DAY, root / "snapshots", transport=transport))
    rows = read_snapshot(root / "snapshots", "usage", DAY).to_pylist()
    writer = SnapshotWriter(root / "snapshots", "usage", DAY)
    for row in rows:
        record = {"id": row["id"], "type": row["type"], "attributes": _renamed(json.loads(row["attributes"]))}
        writer.write(row["account"], [record], extracted_at=row["extracted_at"])
    writer.commit()
    return root, world


def plan(data_dir: Path, file: Path, models: Path | None) -> subprocess.CompletedProcess:
    """``rank-pipeline keywords plan FILE --offline`` on ``data_dir`` (:func:`support.rank_pipeline`), with the
    models folder ``models`` (None: the shipped one), stdin closed, killed past 180 s."""
    env = {"RANK_PIPELINE_MODELS_DIR": str(models)} if models is not None else {}
    return rank_pipeline("keywords", "plan", str(file), "--offline", data_dir=data_dir, env=env, timeout=180,
                         stdin=subprocess.DEVNULL)


def test_keywords_plan_reads_the_quota_of_a_renamed_usage_object_once_the_contract_is_remapped(vendor, tmp_path):
    data_dir, world = vendor
    file = tmp_path / "keywords.yml"
    file.write_text(textwrap.dedent(FILE).lstrip())
    truth = world.usage(world.account("acme").account_id)["attributes"]
    keywords_left, rows_left = truth["keywords"]["remaining"], truth["dataRows"]["remaining"]
    assert isinstance(keywords_left, int) and isinstance(rows_left, int)

    before = plan(data_dir, file, None)  # the contract still reads the old paths: the quota is unknown, not 0
    assert "remaining unknown keyword(s), unknown data row(s)" in before.stdout, before.stdout + before.stderr

    after = plan(data_dir, file, _remapped_models(tmp_path / "models"))
    assert after.returncode == 0, after.stdout + after.stderr
    quota = next(line for line in after.stdout.splitlines() if line.startswith("quota (account acme"))
    assert f"remaining {keywords_left:,} keyword(s), {rows_left:,} data row(s): fits" in quota
    assert "needs 8 keyword(s) and 8 data row(s)" in quota


def test_the_online_quota_reads_the_usage_record_through_the_contract(vendor, tmp_path):
    _, world = vendor
    usage = world.usage(world.account("acme").account_id)

    class Client:
        async def get(self, path: str, params=None):
            assert path == "/v1/account/usage"
            return {**usage, "attributes": _renamed(usage["attributes"])}

    remapped = load_contract(_remapped_models(tmp_path / "models"))
    quota = asyncio.run(read_quota(Client(), "acme", 3, remapped))  # type: ignore[arg-type]
    assert (quota.keywords_remaining, quota.data_rows_remaining) == (
        usage["attributes"]["keywords"]["remaining"], usage["attributes"]["dataRows"]["remaining"])
    shipped = asyncio.run(read_quota(Client(), "acme", 3, load_contract(models_dir())))  # type: ignore[arg-type]
    assert (shipped.keywords_remaining, shipped.data_rows_remaining) == (None, None)
