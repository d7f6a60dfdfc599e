"""The dashboards in a real browser: Superset over a demo's published warehouse.

Door: ``dashboards/superset_ctl.py serve`` (what ``make dashboard`` runs) on a free loopback port with
``RANK_PIPELINE_DATA_DIR`` pointing at a demo's data folder; Debian's chromium, driven by playwright
(tests/dashboards/browse.py, in the dashboards' venv), logs in and opens every dashboard of
dashboards/dashboards.yml. Asserts: every chart renders without error and with data; a domain filter
changes the visibility shown and a date-range filter the days covered; the visibility shown equals the same query run on the marts with DuckDB;
that the dashboards read like a rank tracker (positions with 1 at the top, the drill-down opening on the
10 tracked keywords with the most estimated clicks, numbers and dates formatted, winners green and losers
red; the quota's forecast-accuracy panel shows the mart's scores); and a day published while Superset runs
appears on reload (no restart). The tests that read the demo's warehouse as published share one browser run of
every dashboard (``first_look``), made before the day is published. Screenshots:
tests/dashboards/screenshots/ (git-ignored), named after the views.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import duckdb
import pytest
import yaml
from support import command_env

from rank_pipeline.warehouse.warehouse_file import Warehouse

# the session fixtures run a demo and, on a fresh venv, create Superset's metadata database: minutes
pytestmark = [pytest.mark.xdist_group("dashboards"), pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
SPEC = yaml.safe_load((REPO / "dashboards" / "dashboards.yml").read_text())
LOGIN = ("admin", "admin")
RUNS = ("select count(distinct run_id), count(distinct run_id) filter (where status <> 'success') "
        "from ops.run_history")

LATEST_VISIBILITY = """
    select round(sum(visibility * tracked_keywords) / sum(tracked_keywords), 2)
    from marts.agg_domain_segment_daily
    where snapshot_date = (select max(snapshot_date) from marts.agg_domain_segment_daily)
      and (? is null or domain = ?)
"""


COVERED_DAYS = "select count(distinct snapshot_date) filter (where has_snapshot) from marts.fct_account_snapshot_coverage_daily"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected_charts(slug: str) -> int:
    dash = next(d for d in SPEC["dashboards"] if d["slug"] == slug)
    return sum(len(row) for row in dash["rows"])


def browse(python: Path, base_url: str, views: list[dict]) -> dict:
    plan = {"base_url": base_url, "user": LOGIN[0], "password": LOGIN[1], "out_dir": str(SCREENSHOTS),
            "timeout_s": 180, "views": views}
    proc = subprocess.run([str(python), str(Path(__file__).parent / "browse.py")], input=json.dumps(plan),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"browser run failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)["views"]


def chart(view: dict, name: str) -> dict:
    return next(c for c in view["charts"] if c["name"] == name)


def number(text: str) -> float:
    """A number as a chart shows it: ``1,234.5`` or ``20.7%`` (as 20.7)."""
    return float(text.replace(",", "").removesuffix("%"))


@pytest.fixture(scope="module")
def superset_server(dashboard_tools, demo_data, tmp_path_factory):
    """Superset serving the dashboards over ``demo_data``'s published warehouse; yields its base URL."""
    home = tmp_path_factory.mktemp("superset_home")
    port = free_port()
    env = command_env({"RANK_PIPELINE_DATA_DIR": str(demo_data), "RANK_PIPELINE_DASHBOARD_PORT": str(port)},
                      drop=("SUPERSET_",))
    log = open(home / "serve.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen([str(dashboard_tools), str(REPO / "dashboards" / "superset_ctl.py"), "serve",
                               "--home", str(home)], env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 900
        while True:
            if server.poll() is not None:
                pytest.fail(f"superset_ctl.py serve exited {server.returncode}:\n{(home / 'serve.log').read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(base_url + "/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Superset did not answer /health within 15 minutes"
            time.sleep(2)
        yield base_url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
    assert "login: admin / admin" in (home / "serve.log").read_text()


class FirstLook(NamedTuple):
    """Every dashboard browsed once as the demo published it (:func:`first_look`)."""

    views: list[dict]
    """What was browsed: each dashboard under its slug, then the overview filtered to ``domain`` and the data
    health filtered to the last day."""
    seen: dict
    """``browse.py``'s result by view name: its charts and screenshot."""
    domain: str
    overall: float
    """The latest visibility over every domain, from the marts."""
    by_domain: dict[str, float]
    inode: int
    """The published warehouse file's inode when browsed (a publish replaces the file)."""

    def assert_as_browsed(self, published: Path) -> None:
        """Fail unless ``published`` is still the file this browser run showed: a test comparing the run with the
        marts must run before the module's publish test, as the module orders them."""
        assert published.stat().st_ino == self.inode, "a day was published after the first look: its charts are stale"


@pytest.fixture(scope="module")
def first_look(superset_server, dashboard_tools, demo_data) -> FirstLook:
    """Every dashboard of dashboards.yml, and two filtered views, browsed once before any test of the module
    publishes a day: the tests that read the demo's warehouse as published share this one browser run (each
    browser run logs in and renders every chart again)."""
    published = demo_data / "warehouse.duckdb"
    with duckdb.connect(str(published), read_only=True) as con:
        overall = con.execute(LATEST_VISIBILITY, [None, None]).fetchone()[0]
        by_domain = dict(con.execute(
            "select domain, round(sum(visibility * tracked_keywords) / sum(tracked_keywords), 2) "
            "from marts.agg_domain_segment_daily "
            "where snapshot_date = (select max(snapshot_date) from marts.agg_domain_segment_daily) "
            "group by all").fetchall())
    # a domain whose visibility differs from the whole warehouse's, so the filter must change the number
    domain = next(d for d, v in sorted(by_domain.items()) if v != overall)
    views = [{"name": d["slug"], "slug": d["slug"], "expect_charts": expected_charts(d["slug"])}
             for d in SPEC["dashboards"]]
    views.append({"name": "rankings-overview-filtered", "slug": "rankings-overview",
                  "expect_charts": expected_charts("rankings-overview"),
                  "filters": [{"id": "NATIVE_FILTER-rankings-overview-domain", "column": "domain",
                               "values": [domain]}]})
    with duckdb.connect(str(published), read_only=True) as con:
        last_day = con.execute("select max(snapshot_date) from raw.keywords").fetchone()[0]
    views.append({"name": "data-health-last-day", "slug": "data-health",
                  "expect_charts": expected_charts("data-health"),
                  "filters": [{"id": "NATIVE_FILTER-data-health-date_range",
                               "time_range": f"{last_day} : {last_day + timedelta(days=1)}"}]})
    return FirstLook(views, browse(dashboard_tools, superset_server, views), domain, overall, by_domain,
                     published.stat().st_ino)


def test_every_dashboard_renders_with_data_and_filters_change_the_numbers(first_look, demo_data):
    published = demo_data / "warehouse.duckdb"
    first_look.assert_as_browsed(published)
    views, seen, domain = first_look.views, first_look.seen, first_look.domain
    overall, by_domain = first_look.overall, first_look.by_domain

    assert len(SPEC["dashboards"]) == 5
    for view in views:
        shown = seen[view["name"]]
        assert len(shown["charts"]) == view["expect_charts"], (view["name"], shown["charts"])
        for c in shown["charts"]:
            assert not c["loading"], f"{view['name']}: chart {c['name']} still loading ({shown['screenshot']})"
            assert c["error"] is None, f"{view['name']}: chart {c['name']} failed: {c['error']}"
            assert c["has_data"], f"{view['name']}: chart {c['name']} shows no data ({shown['screenshot']})"
            assert (Path(shown["screenshot"])).stat().st_size > 10_000

    shown_overall = number(chart(seen["rankings-overview"], "Visibility on the last day")["value"])
    shown_domain = number(chart(seen["rankings-overview-filtered"], "Visibility on the last day")["value"])
    # visibility (0..100) is shown as a percentage with one decimal
    assert re.fullmatch(r"\d+\.\d%", chart(seen["rankings-overview"], "Visibility on the last day")["value"])
    assert shown_overall == pytest.approx(overall, abs=0.051)
    assert shown_domain == pytest.approx(by_domain[domain], abs=0.051)
    assert shown_domain != shown_overall
    # each dashboard's data-bearing big numbers agree with the marts they read (and with the raw layer)
    with duckdb.connect(str(published), read_only=True) as con:
        days = con.execute(COVERED_DAYS).fetchone()[0]
        urls = con.execute("select count(distinct ranking_url) from marts.agg_ranking_url_daily").fetchone()[0]
        assert days == con.execute("select count(distinct snapshot_date) from raw.keywords").fetchone()[0]
        assert urls == con.execute(
            "select count(distinct ranking_url) from marts.fct_keyword_rankings_daily").fetchone()[0]
    assert number(chart(seen["data-health"], "Days covered")["value"]) == days
    # the date-range filter: only the last day is covered within it
    assert days > 1 and number(chart(seen["data-health-last-day"], "Days covered")["value"]) == 1
    assert number(chart(seen["landing-pages"], "Ranking URLs")["value"]) == urls
    # the run history (ops.run_history): the demo's one run over its days, none failed, the last success's day
    with duckdb.connect(str(published), read_only=True) as con:
        runs, failed = con.execute(RUNS).fetchone()
        # the run that ended last among the successes, and the last day it ran (not the last day of any run: here
        # the billing-cycle run ends last, over days before the demo's)
        last_ended, last_day_run = con.execute(
            "select ended_at, snapshot_date from ops.run_history where status = 'success' "
            "order by ended_at desc, snapshot_date desc limit 1").fetchone()
        run_days = con.execute("select count(distinct snapshot_date) from ops.run_history").fetchone()[0]
    # the demo's one run over its days, and the one run over the days closing a billing cycle (conftest.demo_data)
    assert (runs, failed, run_days) == (1 + 1, 0, days)
    assert number(chart(seen["data-health"], "Pipeline runs")["value"]) == runs
    assert number(chart(seen["data-health"], "Failed runs")["value"]) == failed
    last_success = chart(seen["data-health"], "Last successful run")["text"].split("\n")[-1].split("\t")
    shown_end = datetime.strptime(last_success[0], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    assert last_success[1] == last_day_run.isoformat(), last_success
    assert abs(shown_end - last_ended) < timedelta(seconds=1), (last_success, last_ended)  # the format drops the µs


WINNER, LOSER = "#1a9850", "#d73027"  # dashboards.yml colors
WINNER_RGB, LOSER_RGB = "rgb(26, 152, 80)", "rgb(215, 48, 39)"
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# the 10 tracked keywords (keyword_id) with the most estimated clicks over the published days, labelled as
# the position history labels a tracked keyword; ties at the 10th place are returned with it
TOP_TRACKED_KEYWORDS = """
    with clicks as (
        select r.keyword_id,
               concat_ws(' · ', any_value(r.keyword), any_value(coalesce(d.domain, r.domain_id)),
                         any_value(r.search_engine || ' ' || r.device),
                         any_value(coalesce(k.location_name, r.location_code))) as label,
               sum(r.estimated_clicks) as clicks
        from marts.fct_keyword_rankings_daily r
        left join marts.dim_domains d on d.domain_id = r.domain_id
        left join marts.dim_keywords k on k.keyword_id = r.keyword_id
        group by r.keyword_id
    )
    select label, clicks from clicks where clicks is not null order by clicks desc
"""


def table_column(detail: dict, header: str) -> list[dict]:
    """The cells ``{text, color}`` of one column of a table chart's first page."""
    i = detail["headers"].index(header)
    return [row[i] for row in detail["rows"]]


def test_dashboards_read_like_a_rank_tracker(first_look, demo_data):
    published = demo_data / "warehouse.duckdb"
    first_look.assert_as_browsed(published)
    with duckdb.connect(str(published), read_only=True) as con:
        ranked = con.execute(TOP_TRACKED_KEYWORDS).fetchall()
        utilisation = con.execute(
            "select max(utilisation_pct) from marts.fct_quota_cycle_daily q "
            "where snapshot_date = (select max(snapshot_date) from marts.fct_quota_cycle_daily f "
            "                       where f.account = q.account)").fetchone()[0]
        movements = dict(con.execute(
            "select movement_1d, count(*) from marts.fct_keyword_rankings_daily "
            "where snapshot_date = (select max(snapshot_date) from marts.fct_keyword_rankings_daily) "
            "  and (is_winner_1d or is_loser_1d) group by all").fetchall())
    overview, drill, landing, quota, health = (first_look.seen[slug] for slug in (
        "rankings-overview", "keyword-drill-down", "landing-pages", "quota", "data-health"))

    # position history: 1 at the top, one series per tracked keyword, the 10 with the most estimated clicks
    history = chart(drill, "Position history (the 10 keywords with the most estimated clicks)")["detail"]
    assert history["y_inverse"] is True and history["y_min"] == 1
    assert history["y_labels"][0] == "1"
    names = {s["name"] for s in history["series"]}
    assert len(history["series"]) == 10 == len(names), history["series"]
    tenth = ranked[9][1]
    must = {label for label, clicks in ranked if clicks > tenth}
    may = {label for label, clicks in ranked if clicks >= tenth}
    assert must <= names <= may, (sorted(names), ranked[:12])

    # dates without a time of day on every time axis and date column; no unformatted numbers anywhere
    for view in (overview, drill, landing, quota, health):
        for c in view["charts"]:
            d = c["detail"]
            if d and d["kind"] == "echarts" and c["viz"].startswith("echarts_timeseries") and \
                    c["name"] not in ("Estimated clicks per landing page (top 15)",
                                      "Which domains burn the keyword quota (keywords added)"):
                labels = [t for t in d["x_labels"] if t]
                assert labels and all(DATE.fullmatch(t) for t in labels), (c["name"], d["x_labels"])
            if d and d["kind"] == "table":
                for row in d["rows"]:
                    for cell in row:
                        assert "00:00:00" not in cell["text"] or "last_" in " ".join(d["headers"]), (c["name"], cell)
                        assert not re.fullmatch(r"-?[\d,]*\.\d{3,}", cell["text"]), (c["name"], cell)
    changes = chart(drill, "Ranking URL changes")["detail"]
    assert all(DATE.fullmatch(cell["text"]) for cell in table_column(changes, "snapshot_date"))

    # percentages with one decimal: the quota's utilisation (the mart's utilisation_pct, 0..100)
    projection = chart(quota, "Projected exhaustion against the reset")["detail"]
    shown = [cell["text"] for cell in table_column(projection, "utilisation")]
    assert shown[0] == f"{utilisation:.1f}%" and all(re.fullmatch(r"\d+\.\d%", t) for t in shown), shown
    assert all(t.endswith("%") and re.fullmatch(r"-?\d+\.\d%", t) for t in
               chart(quota, "Quota utilisation (%)")["detail"]["y_labels"])
    assert all(DATE.fullmatch(cell["text"]) or cell["text"] == "N/A"
               for cell in table_column(projection, "cycle_start"))
    # every forecast scored once its cycle ended: one row per account and metric, the mart's counts and errors
    with duckdb.connect(str(published), read_only=True) as con:
        scored = {(a, m): (n, err) for a, m, n, err in con.execute(
            "select account, metric, count(*), avg(abs(cycle_end_error_days)) "
            "from marts.fct_quota_forecast_accuracy group by all").fetchall()}
    accuracy = chart(quota, "Forecast accuracy (scored once the cycle ended)")["detail"]
    assert scored and accuracy["rows"], "the forecast-accuracy panel shows no rows"
    shown = {(a["text"], m["text"]): (number(n["text"]), number(e["text"])) for a, m, n, e in zip(
        table_column(accuracy, "account"), table_column(accuracy, "metric"), table_column(accuracy, "Forecasts scored"),
        table_column(accuracy, "Cycle end error (days)"), strict=True)}
    assert shown == {k: (n, pytest.approx(err, abs=0.051)) for k, (n, err) in scored.items()}, (shown, scored)
    # thousands separated: the quota limits (1,500 and more) and the estimated clicks axis
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})+", cell["text"]) for cell in table_column(projection, "quota_limit"))
    clicks_axis = chart(overview, "Estimated clicks trend")["detail"]["y_labels"]
    assert any(re.fullmatch(r"\d{1,3}(,\d{3})+", t) for t in clicks_axis), clicks_axis

    # winners green and losers red: the series of every chart, and the tables' cells
    for name, series in [("Winners and losers per day (against the day before)", {"Winners": WINNER, "Losers": LOSER}),
                         ("Keywords entering and leaving the top 10", {"Entered top 10": WINNER, "Left top 10": LOSER})]:
        colors = {s["name"]: s["color"].lower() for s in chart(overview, name)["detail"]["series"]}
        assert colors == series, (name, colors)
    movers = chart(overview, "Winners and losers (last day against the day before)")["detail"]
    assert movers["rows"], "the winners and losers table shows no rows"
    expected_color = {"improved": WINNER_RGB, "entered": WINNER_RGB, "declined": LOSER_RGB, "dropped_out": LOSER_RGB}
    for movement, change in zip(table_column(movers, "movement_1d"), table_column(movers, "position_change_1d"),
                                strict=True):
        assert movement["text"] in movements
        assert movement["color"] == expected_color[movement["text"]], movement
        if change["text"] not in ("", "N/A"):
            assert change["color"] == (WINNER_RGB if number(change["text"]) > 0 else LOSER_RGB), change
            assert change["text"].startswith("+") == (number(change["text"]) > 0)
    pages = chart(landing, "Landing pages")["detail"]
    for header, rgb in (("Keywords gained", WINNER_RGB), ("Keywords lost", LOSER_RGB)):
        for cell in table_column(pages, header):
            assert (cell["color"] == rgb) == (number(cell["text"]) > 0), (header, cell)


def test_a_newly_published_day_appears_without_restarting_superset(superset_server, dashboard_tools, demo_data,
                                                                   pipeline, first_look):
    published = demo_data / "warehouse.duckdb"
    with duckdb.connect(str(published), read_only=True) as con:
        first_day = con.execute("select min(snapshot_date) from raw.keywords").fetchone()[0]
        days_before = con.execute(COVERED_DAYS).fetchone()[0]
        runs_before = con.execute(RUNS).fetchone()[0]
    first_look.assert_as_browsed(published)
    before = first_look.seen["data-health"]  # the day not yet published
    assert number(chart(before, "Days covered")["value"]) == days_before
    assert number(chart(before, "Pipeline runs")["value"]) == runs_before

    # the daily job for the day before the demo's first day publishes a new warehouse file while Superset runs
    new_day: date = first_day - timedelta(days=1)
    old_inode = published.stat().st_ino
    pipeline(demo_data, "run", "--date", new_day.isoformat())
    assert published.stat().st_ino != old_inode, "the publish did not replace the file"
    with Warehouse(demo_data / "warehouse.build.duckdb", published).read_only_connect() as con:
        days_after = con.execute(COVERED_DAYS).fetchone()[0]
    assert days_after == days_before + 1

    view = [{"name": "data-health-after-publish", "slug": "data-health", "expect_charts": expected_charts("data-health")}]
    after = browse(dashboard_tools, superset_server, view)["data-health-after-publish"]
    assert number(chart(after, "Days covered")["value"]) == days_after
    # the run that published it is in the run history the dashboard shows
    assert number(chart(after, "Pipeline runs")["value"]) == runs_before + 1
    assert new_day.isoformat() in chart(after, "Last successful run")["text"]
