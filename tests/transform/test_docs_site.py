"""``rank-pipeline docs``: the documentation site written and served as a user runs it, read in headless
Chromium (Debian's, driven over the DevTools protocol: :mod:`cdp`).

The page loads with the model graph; typing in the search box finds a column, and its result leads to
the column's row on its model's page; the lineage of ``marts.agg_domain_daily.visibility`` names the
keyword's position in ``raw.keywords`` and the CTR seed, each a link that opens that column on its
table's page. The Markdown dictionary comes from the same source. Bad input is one line, exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cdp import Chromium, chromium_path
from support import command_env, rank_pipeline, rank_pipeline_argv, require

from rank_pipeline.api.endpoints import render_markdown

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_docs_writes_the_site_and_the_dictionary_from_the_same_source(tmp_path):
    proc = rank_pipeline("docs", "--out", "site", "--dictionary", "dd.md", data_dir=tmp_path / "data", cwd=tmp_path,
                         timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "open site/index.html" in proc.stdout
    site = tmp_path / "site"
    for page in ("index.html", "raw.keywords.html", "seeds.ctr_curve.html", "staging.stg_keywords.html",
                 "marts.agg_domain_daily.html", "assets/site.js", "assets/search-index.js"):
        assert (site / page).is_file(), page
    text = (site / "index.html").read_text() + (site / "assets" / "site.js").read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    dictionary = (tmp_path / "dd.md").read_text()
    assert render_markdown().strip() in dictionary
    row = next(line for line in dictionary.splitlines() if line.startswith("| `visibility` |"))
    assert "`raw.keywords.attributes.results.organic.position`" in row and "`seeds.ctr_curve.ctr`" in row
    # the repository's dictionary is the generated one
    assert dictionary == (ROOT / "docs" / "reference" / "data-dictionary.md").read_text()


@pytest.mark.parametrize("args, words", [
    (["--out", "dd.md"], "is the site's folder"),
    (["--models-dir", "nowhere"], "is not a folder"),
    (["--serve", "--port", "70000"], "is not a port"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    proc = rank_pipeline("docs", *args, data_dir=tmp_path / "data", cwd=tmp_path, timeout=600)
    assert proc.returncode == 2
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "docs").exists()


@pytest.fixture
def served(tmp_path):
    """``rank-pipeline docs --serve --port 0`` as a subprocess; yields its base URL; stopped after."""
    env = command_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path / "data")})
    proc = subprocess.Popen([*rank_pipeline_argv(), "docs", "--out", "site", "--serve", "--port", "0"], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        url = None
        while url is None:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"docs --serve ended: {proc.stderr.read()}")
            if line.startswith("serving "):
                url = line.split(" on ", 1)[1].split()[0]
            assert time.monotonic() < deadline
        assert url.startswith("http://127.0.0.1:")
        yield url
    finally:
        proc.terminate()  # SIGTERM stops it (asserted: a server that ignores it fails the test)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
            pytest.fail("rank-pipeline docs --serve did not stop within 30 s of SIGTERM")


@pytest.mark.browser
def test_the_served_site_in_chromium_searches_and_shows_column_lineage(served, tmp_path):
    require(chromium_path(), "Debian's chromium is not installed (make test installs it: Makefile target browser)")
    with Chromium(tmp_path / "profile") as browser:
        browser.goto(served + "index.html")
        assert browser.evaluate("document.title").startswith("Models")
        nodes = browser.evaluate("[...document.querySelectorAll('#graph a')].map(a => a.getAttribute('href'))")
        assert "marts.agg_domain_daily.html" in nodes and "raw.keywords.html" in nodes and len(nodes) > 30

        browser.type("#search", "volume_weighted_visib")
        hits = browser.wait_for("[...document.querySelectorAll('#results a.hit')].map(a => a.dataset.name)")
        assert "marts.agg_domain_daily.volume_weighted_visibility" in hits
        assert all("volume_weighted_visib" in h for h in hits[:3])
        browser.evaluate("document.querySelector('#results a.hit[data-name=\"marts.agg_domain_daily."
                         "volume_weighted_visibility\"]').click()")
        browser.wait_for("location.pathname.endsWith('/marts.agg_domain_daily.html') && "
                         "location.hash === '#c-volume_weighted_visibility' && document.readyState === 'complete'")
        assert browser.evaluate("document.querySelector(':target').dataset.column") == "volume_weighted_visibility"

        links = browser.evaluate(
            "[...document.querySelectorAll('#c-visibility td.lineage .origin a')]"
            ".map(a => [a.textContent, a.getAttribute('href')])")
        assert ["raw.keywords.attributes.results.organic.position", "raw.keywords.html#c-attributes"] in links
        assert ["seeds.ctr_curve.ctr", "seeds.ctr_curve.html#c-ctr"] in links
        reads = browser.evaluate("[...document.querySelectorAll('#c-visibility td.lineage .reads a')]"
                                 ".map(a => a.textContent)")
        assert reads == ["marts.int_keyword_rankings_rollup_daily.visibility"]
        assert "select * from final" in browser.evaluate("document.querySelector('code.sql').textContent")

        browser.evaluate("document.querySelector('#c-visibility td.lineage .origin a[href^=\"seeds.\"]').click()")
        browser.wait_for("location.pathname.endsWith('/seeds.ctr_curve.html') && document.readyState === 'complete'")
        used = browser.evaluate("[...document.querySelectorAll('#c-ctr td.lineage .users a')].map(a => a.textContent)")
        assert "marts.fct_keyword_rankings_daily.estimated_ctr" in used

        browser.goto(served + "raw.keywords.html")
        fields = browser.evaluate("[...document.querySelectorAll('h2 + table tbody tr td:first-child code')]"
                                  ".map(c => c.textContent)")
        assert "attributes.results.organic.position" in fields
        browser.type("#search", "no_such_column_anywhere")
        assert browser.wait_for("document.querySelector('#results li.none') && "
                                "document.querySelector('#results li.none').textContent")


TUTORIALS = ("tutorials/vendor-shape", "tutorials/your-own-project", "tutorials/first-real-run",
             "reference/vendor-contract")
"""The project's tutorials and the contract's reference, whose commands a user copies."""


@pytest.mark.browser
@pytest.mark.slow
def test_the_tutorials_render_in_chromium_without_a_literal_backtick(tmp_path):
    """The MkDocs site as ``make site`` builds it, each tutorial opened in Chromium: its rendered text holds
    no backtick (a broken code span shows its backticks), and its commands are in code blocks."""
    require(chromium_path(), "Debian's chromium is not installed (make test installs it: Makefile target browser)")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run([str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")], cwd=ROOT,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    with Chromium(tmp_path / "profile") as browser:
        for page in TUTORIALS:
            browser.goto((tmp_path / "site" / page / "index.html").as_uri())
            text = browser.evaluate("document.querySelector('article').innerText")
            assert text and "`" not in text, (page, text[max(0, text.find("`") - 80):text.find("`") + 80])
            blocks = browser.evaluate("document.querySelectorAll('article pre code').length")
            assert blocks > 0, page
        browser.goto((tmp_path / "site" / "tutorials" / "vendor-shape" / "index.html").as_uri())
        code = browser.evaluate("[...document.querySelectorAll('article pre code')].map(c => c.textContent).join('\\n')")
        assert "rank-pipeline profile --suggest" in code and "git apply" in code
