"""Each API resource is declared once (rank_pipeline.api.endpoints): everything else is derived from it.

Checked here: every snapshot has the same columns (no field of ``attributes`` is flattened: the vendor's contract
alone holds the fields and their paths); every asset key/description, fan-out step and docs entry comes from the
declarations; adding a resource is one declaration (a subprocess adds one and extracts it end to end);
the typed manifest writes the same JSON as before and reads old manifests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, date, datetime
from pathlib import Path

import httpx
import pytest

from rank_pipeline.api import endpoints as catalog
from rank_pipeline.api.endpoints import CATALOG, children_of
from rank_pipeline.extract.day import AccountSource, run_extraction
from rank_pipeline.sandbox import World, create_app
from rank_pipeline.settings import models_dir
from rank_pipeline.snapshots.manifest import SnapshotManifest
from rank_pipeline.snapshots.reader import read_manifest
from rank_pipeline.snapshots.schema import ENDPOINTS, arrow_schema
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.transform.contract import load_contract

DAY = date(2026, 11, 21)
COMMON = ["snapshot_date", "account", "id", "type", "parent_id", "extracted_at", "attributes"]


def test_snapshot_schema_is_the_declaration():
    assert ENDPOINTS == tuple(r.name for r in CATALOG)
    for r in CATALOG:
        # ids, the parent and the attributes JSON: no field of a record has a column of its own
        assert arrow_schema(r.name).names == COMMON
        assert list(catalog.raw_column_descriptions(r.name)) == [*COMMON, "loaded_at"]


def test_asset_specs_and_descriptions_come_from_the_declaration():
    from rank_pipeline.defs.extract_assets import extract_snapshots
    from rank_pipeline.defs.warehouse_assets import PER_ACCOUNT_ENDPOINTS, RAW_KEYS

    keys = {tuple(k.path): spec for k, spec in extract_snapshots.specs_by_key.items()}
    assert set(keys) == {("snapshots", r.name) for r in CATALOG}
    for r in CATALOG:
        assert r.description in keys[("snapshots", r.name)].description
        assert r.path in keys[("snapshots", r.name)].description
    assert set(RAW_KEYS) == set(ENDPOINTS)
    assert PER_ACCOUNT_ENDPOINTS == {r.name for r in CATALOG if not r.account_scoped} == {"locations", "languages"}


def test_docs_list_every_declared_resource():
    text = catalog.render_markdown()
    for r in CATALOG:
        assert f"### raw.{r.name}" in text and r.path in text and r.description in text
    assert "vendor_contract.yml" in text
    committed = Path(__file__).resolve().parents[2] / "docs" / "reference" / "data-dictionary.md"
    assert text.strip() in committed.read_text()  # the committed dictionary holds the generated raw part


def test_fan_out_reads_exactly_the_declared_requests(tmp_path):
    """Every request the extraction sends is one a declaration yields, and every one it yields is sent."""
    world = World(today=DAY)
    app = httpx.ASGITransport(app=create_app(world))
    seen: list[tuple[str, tuple]] = []

    class Recording(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request):
            params = tuple(sorted((k, v) for k, v in request.url.params.items() if k not in ("page", "per_page")))
            seen.append((request.url.path, params))
            return await app.handle_async_request(request)

    account = next(a for a in world.accounts if a.api_enabled)
    run_extraction("http://127.0.0.1", [AccountSource(account.name, account.api_key)], DAY, tmp_path,
                   transport=Recording(), resume=False)
    # what the declarations say must be read, computed from the sandbox's ground truth
    records = {"domains": world.domains(account.account_id)}
    expected = {(r.path, ()) for r in children_of(None)}
    records["keywords"] = [k for d in records["domains"] for k in world.keywords(d["id"])]
    contract = load_contract(models_dir())
    for parent in ("domains", "keywords"):
        for child in children_of(parent):
            for record in records[parent]:
                expected |= {(q.path, tuple(sorted(q.params))) for q in child.requests_from_parent(child, record, contract)}
    assert set(seen) == expected
    assert {r.name for r in CATALOG} == {r.name for p in (None, "domains", "keywords") for r in children_of(p)}


ADD_ONE = textwrap.dedent('''
    import json, sys
    from datetime import date
    import httpx
    from rank_pipeline.api import endpoints as catalog
    from rank_pipeline.api.endpoints import Endpoint

    # the one declaration: a list of notes per domain
    catalog.CATALOG = catalog.CATALOG + (Endpoint(
        name="notes", path="/v1/domains/{parent_id}/notes", description="Notes of each domain.",
        spec="imagined", parent="domains", parent_404_tolerated=True, checkpointed=True),)

    from rank_pipeline.defs.extract_assets import extract_snapshots
    from rank_pipeline.extract.day import AccountSource, run_extraction
    from rank_pipeline.sandbox import World, create_app
    from rank_pipeline.snapshots.reader import read_snapshot

    day = date(2026, 11, 21)
    world = World(today=day)
    app = httpx.ASGITransport(app=create_app(world))

    class WithNotes(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request):
            path = request.url.path
            if path.endswith("/notes"):
                domain = path.split("/")[3]
                body = {"data": [{"id": f"n-{domain}", "type": "note", "attributes": {"body": "hi " + domain}}]}
                headers = {"X-Total-Count": "1", "X-Total-Pages": "1", "X-Per-Page": "100", "X-Current-Page": "1",
                           "content-type": "application/json"}
                return httpx.Response(200, content=json.dumps(body).encode(), headers=headers)
            return await app.handle_async_request(request)

    account = next(a for a in world.accounts if a.api_enabled)
    report = run_extraction("http://127.0.0.1", [AccountSource(account.name, account.api_key)], day,
                            sys.argv[1], transport=WithNotes(), resume=False)
    rows = read_snapshot(sys.argv[1], "notes", day).to_pylist()
    print(json.dumps({
        "rows": sorted((r["parent_id"], r["id"], json.loads(r["attributes"])["body"]) for r in rows),
        "domains": sorted(d["id"] for d in world.domains(account.account_id)),
        "manifest_complete": report.manifests["notes"].complete,
        "asset_keys": sorted("/".join(k.path) for k in extract_snapshots.specs_by_key),
        "docs": "### raw.notes" in catalog.render_markdown(),
    }))
''')


@pytest.mark.xdist_group("catalog_subprocess")
def test_adding_a_resource_is_one_declaration(tmp_path):
    """A new declared resource is extracted, snapshotted with its attributes, an asset and in the docs."""
    out = subprocess.run([sys.executable, "-c", ADD_ONE, str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rows"] == [[d, f"n-{d}", f"hi {d}"] for d in result["domains"]]
    assert result["manifest_complete"] is True
    assert "snapshots/notes" in result["asset_keys"]
    assert result["docs"] is True


def test_manifest_json_is_unchanged_and_old_manifests_read(tmp_path):
    writer = SnapshotWriter(tmp_path, "tags", DAY)
    writer.write("acme", [{"id": "t1", "type": "tag", "attributes": {}}])
    writer.set_report("acme", {"complete": True, "expected": 1, "delivered": 1})  # a partial report, as before
    writer.write("globex", [])
    manifest = writer.commit()
    on_disk = json.loads((tmp_path / "tags" / f"snapshot_date={DAY}" / "_manifest.json").read_text())
    assert on_disk == {
        "resource": "tags", "snapshot_date": DAY.isoformat(), "schema_version": 2, "row_count": 1,
        "files": ["part-acme-0000.parquet", "part-globex-0000.parquet"], "written_at": on_disk["written_at"],
        "complete": True,
        "accounts": {"acme": {"complete": True, "expected": 1, "delivered": 1, "rows": 1}, "globex": {"rows": 0}},
    }
    assert datetime.fromisoformat(on_disk["written_at"]).tzinfo is not None
    assert manifest == read_manifest(tmp_path, "tags", DAY)
    # a manifest written by an earlier version (extra keys, no report) still reads
    old = {"resource": "tags", "snapshot_date": "2026-01-02", "schema_version": 1, "row_count": 0, "files": [],
           "written_at": datetime(2026, 1, 2, tzinfo=UTC).isoformat(), "complete": True,
           "accounts": {"acme": {"rows": 0, "legacy": 1}}, "note": "old"}
    parsed = SnapshotManifest.from_json(json.dumps(old))
    assert parsed.accounts["acme"].rows == 0 and json.loads(parsed.to_json()) == old
