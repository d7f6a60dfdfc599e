"""The contract edits that docs/reference/vendor-contract.md ("Worked examples") gives for the sandbox's
``vendor-d`` and ``vendor-e`` shapes, laid over the shipped contract, read every field of every record of a
world in that shape as the shipped contract reads the same record in the default shape."""

from __future__ import annotations

import re
import shutil
from datetime import date
from pathlib import Path

import pytest
import yaml

from rank_pipeline.sandbox import World, WorldConfig
from rank_pipeline.sandbox.shapes import parse_shape
from rank_pipeline.settings import models_dir
from rank_pipeline.transform.contract import CONTRACT_FILE, load_contract

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "vendor-contract.md"
TODAY = date(2026, 3, 10)


def documented_edits() -> dict[str, dict[str, list[dict]]]:
    """Shape -> ``{endpoint: [field, ...]}``: each yaml block of "Worked examples", under the paragraph
    naming its shape."""
    section = DOC.read_text().split("## Worked examples", 1)[1]
    parts = section.split("```yaml\n")
    edits = {}
    for before, after in zip(parts, parts[1:], strict=False):
        shape = re.findall(r"`(vendor-[a-z])`", before)[-1]
        block = yaml.safe_load(after.split("```", 1)[0])
        edits[shape] = {endpoint: entry["fields"] for endpoint, entry in block.items()}
    return edits


def _remapped(root: Path, edits: dict[str, list[dict]]) -> Path:
    """A copy of the shipped models folder whose contract has the fields of ``edits`` replaced by name."""
    shutil.copytree(models_dir(), root)
    path = root / CONTRACT_FILE
    doc = yaml.safe_load(path.read_text())
    for endpoint, fields in edits.items():
        by_name = {f["name"]: f for f in fields}
        entry = doc["contract"][endpoint]
        assert by_name.keys() <= {f["name"] for f in entry["fields"]}, endpoint
        entry["fields"] = [by_name.get(f["name"], f) for f in entry["fields"]]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _records(world: World) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {"domains": [], "keywords": [], "competitors": [], "tags": [], "usage": []}
    for account in world.accounts:
        out["tags"] += world.tags(account.account_id)
        out["usage"].append(world.usage(account.account_id))
        for domain in world.domains(account.account_id):
            out["domains"].append(domain)
            out["keywords"] += world.keywords(domain["id"])
            out["competitors"] += world.competitors(domain["id"])
    return out


def test_the_reference_documents_both_shapes():
    assert set(documented_edits()) == {"vendor-d", "vendor-e"}


@pytest.mark.parametrize("shape", ["vendor-d", "vendor-e"])
def test_the_documented_edit_reads_the_shape_as_the_shipped_contract_reads_the_default(tmp_path, shape):
    shipped = load_contract(models_dir())
    edited = load_contract(_remapped(tmp_path / "models", documented_edits()[shape]))
    setting = parse_shape(shape)
    read = 0
    for endpoint, records in _records(World(WorldConfig(), today=TODAY)).items():
        assert records, endpoint
        for record in records:
            served = setting.record(endpoint, record, TODAY)["attributes"]
            for field in shipped.fields[endpoint]:
                expected = shipped.value(endpoint, field.name, record["attributes"])
                assert edited.value(endpoint, field.name, served) == expected, (endpoint, field.name, served)
                read += expected is not None
    assert read > 0
