"""The documentation site: ``mkdocs build --strict`` as ``make site`` runs it (a broken link, a page missing
from the nav or a nav entry without a page fails), the README's limits, and the generated reference pages
holding what the code holds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rank_pipeline.cli.reference import exit_codes_page, settings_rows
from rank_pipeline.errors import EXIT_DATA_FOLDER, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).parent / "mkdocs"


def _build(tmp_path: Path, config: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(tmp_path / "site")],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_site_builds_strict_with_every_page_and_the_generated_reference(tmp_path):
    done = _build(tmp_path, ROOT / "mkdocs.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    for page in ("tutorials/vendor-shape", "how-to/alerts", "reference/settings", "reference/cli",
                 "reference/exit-codes", "reference/data-dictionary", "concepts/any-order", "concepts/completeness"):
        assert (site / page / "index.html").is_file(), page
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "keywords plan" in cli and "--live" in cli  # every command, nested ones included
    assert "RANK_SANDBOX_SHAPE" in (site / "reference" / "settings" / "index.html").read_text()


@pytest.mark.slow
def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The same configuration over a copy of docs/ with one link to a page that does not exist."""
    copy = tmp_path / "project"
    (copy / "docs").mkdir(parents=True)
    subprocess.run(["cp", "-r", f"{ROOT / 'docs'}/.", str(copy / "docs")], check=True)
    (copy / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text())
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [the missing page](nowhere.md).\n")
    done = _build(tmp_path, copy / "mkdocs.yml")
    assert done.returncode != 0
    assert "'nowhere.md', but the target is not found" in done.stdout + done.stderr


def test_the_readme_is_short_and_names_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert "make demo" in readme and "make test" in readme
    assert not re.search(r"\bissue \d+", readme, re.I)


def test_the_settings_reference_lists_every_variable_the_package_reads():
    listed = {name for name, _ in settings_rows()}
    read = set()
    for path in (ROOT / "rank_pipeline").rglob("*.py"):
        read |= set(re.findall(r"\"(RANK_(?:TRACKER|PIPELINE|SANDBOX)_[A-Z0-9_]*[A-Z0-9])\"", path.read_text()))
    assert read and read <= listed, sorted(read - listed)


def test_the_exit_codes_page_lists_each_status():
    page = exit_codes_page()
    for status in (EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DATA_FOLDER, EXIT_INTERRUPTED):
        assert f"\n| {status} | " in page, status
    assert "`rank_pipeline.warehouse.errors.LoadError`" in page
