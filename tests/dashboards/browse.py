"""Drive Superset in headless Chromium and report what each dashboard shows (run by the dashboards' venv).

Called by tests/dashboards/test_dashboards_browser.py as
``.venv-superset/bin/python tests/dashboards/browse.py < plan.json``; prints one JSON object.

plan: ``{"base_url", "user", "password", "out_dir", "views": [{"name", "slug", "expect_charts",
"filters": [{"id", "column", "values"}]}]}``. Each view logs in once (shared session), opens
``/superset/dashboard/<slug>/`` with the filters applied as native filters (``native_filters`` URL
parameter, as Superset's own share links do), waits until every chart has rendered (data, empty state or
error), screenshots the page into ``out_dir/<name>.png``, and reports per chart: name, viz type, error
text, whether it shows data, and its text.

Debian's chromium is used (``/usr/bin/chromium``); no browser is downloaded.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import prison
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HOLDER = '[data-test="dashboard-component-chart-holder"]'

# What a chart holder shows, read in the page: loading, error, empty, data (by viz type).
STATE_JS = """
(holders) => holders.map((h) => {
  const c = h.querySelector('[data-test-chart-name]');
  const viz = c ? c.getAttribute('data-test-viz-type') : null;
  const name = c ? c.getAttribute('data-test-chart-name') : null;
  const text = h.innerText || '';
  const loading = !!h.querySelector('[data-test="loading-indicator"], .loading, [aria-label="loading"]');
  const errEl = h.querySelector('[data-test="error-alert"], .ant-alert-error, [data-test="chart-error"]');
  const error = errEl ? (errEl.innerText || 'error') : null;
  const empty = /No results were returned|No data|No results/i.test(text) && !h.querySelector('canvas');
  let hasData = false;
  let value = null;
  if (viz === 'big_number_total' || viz === 'big_number') {
    const v = h.querySelector('.header-line');
    value = v ? v.innerText.trim() : null;
    hasData = !!value && !/no data/i.test(value);
  } else if (viz === 'table') {
    hasData = h.querySelectorAll('tbody tr td').length > 0 && !empty;
  } else {
    hasData = !!h.querySelector('canvas, svg path') && !empty;
  }
  return {name, viz, loading, error, empty, has_data: hasData, value, text: text.slice(0, 400)};
})
"""


# What a chart draws, read in the page. ECharts charts: the chart instance (found through React's fiber of
# the element ECharts renders into) gives the options in force (series names and colours, axis inverse) and
# each axis's labels as ECharts lays them out (getViewLabels: the texts drawn on the canvas). Tables: the
# header texts and, per row of the first page, each cell's text and computed text colour.
DETAIL_JS = """
(holders) => holders.map((h) => {
  const el = h.querySelector('[_echarts_instance_]');
  if (el) {
    const key = Object.keys(el).find((k) => k.startsWith('__reactFiber$'));
    let f = key ? el[key] : null;
    let chart = null;
    while (f && !chart) {
      let hook = f.memoizedState;
      while (hook && typeof hook === 'object' && 'next' in hook && !chart) {
        const v = hook.memoizedState;
        if (v && v.current && typeof v.current.getOption === 'function') chart = v.current;
        hook = hook.next;
      }
      f = f.return;
    }
    if (!chart) return {kind: 'echarts', error: 'no ECharts instance found'};
    const opt = chart.getOption();
    const labels = (axis) => {
      const comp = chart.getModel().getComponent(axis, 0);
      if (!comp || !comp.axis) return [];
      return comp.axis.getViewLabels().map((l) => l.formattedLabel);
    };
    const yAxis = (opt.yAxis || [])[0] || {};
    const series = (opt.series || []).map((s) => ({
      name: s.name, type: s.type,
      color: (s.itemStyle && s.itemStyle.color) || (s.lineStyle && s.lineStyle.color) || null,
      points: (s.data || []).length,
    }));
    return {kind: 'echarts', y_inverse: !!yAxis.inverse, y_min: yAxis.min === undefined ? null : yAxis.min,
            y_labels: labels('yAxis'), x_labels: labels('xAxis'), series};
  }
  // a table may be drawn as two <table>s (a sticky header's and the body's)
  if (h.querySelector('table')) {
    const headers = [...h.querySelectorAll('table thead tr')].slice(0, 1)
      .flatMap((tr) => [...tr.querySelectorAll('th')].map((th) => th.innerText.trim()));
    const rows = [...h.querySelectorAll('table tbody tr')]
      .map((tr) => [...tr.querySelectorAll('td')].map((td) => ({text: td.innerText.trim(),
                                                                color: getComputedStyle(td).color})))
      .filter((cells) => cells.length > 0);
    return {kind: 'table', headers, rows};
  }
  return null;
})
"""


def native_filters(filters: list[dict]) -> str:
    """The ``native_filters`` URL parameter (rison) applying each ``{id, column, values}`` select filter
    or ``{id, time_range}`` date-range filter (``"2026-11-21 : 2026-11-22"``, end exclusive)."""
    state = {}
    for f in filters:
        if "time_range" in f:
            value, extra = f["time_range"], {"time_range": f["time_range"]}
        else:
            value, extra = f["values"], {"filters": [{"col": f["column"], "op": "IN", "val": f["values"]}]}
        state[f["id"]] = {"id": f["id"], "ownState": {}, "filterState": {"value": value}, "extraFormData": extra}
    return prison.dumps(state)


def settled(states: list[dict], expect: int) -> bool:
    """Every expected chart is there and done: showing data, an empty state or an error."""
    return len(states) >= expect and all(
        not s["loading"] and (s["error"] or s["empty"] or s["has_data"]) for s in states)


def capture(page, expect: int, timeout_s: float, shot: Path) -> list[dict]:
    """Chart states once ``expect`` charts are settled on two reads a second apart, with a screenshot
    taken in between (and read again after it, so what is reported is what the screenshot shows);
    the last states read when time runs out."""
    deadline = time.monotonic() + timeout_s
    states: list[dict] = []
    while time.monotonic() < deadline:
        states = page.eval_on_selector_all(HOLDER, STATE_JS)
        if settled(states, expect):
            page.wait_for_timeout(2500)  # ECharts animates a series in for about a second
            page.screenshot(path=str(shot))
            again = page.eval_on_selector_all(HOLDER, STATE_JS)
            if again == states:
                details = page.eval_on_selector_all(HOLDER, DETAIL_JS)
                return [{**state, "detail": detail} for state, detail in zip(again, details, strict=False)]
            states = again
        page.wait_for_timeout(500)
    page.screenshot(path=str(shot))
    return states


LOG_BEACON = re.compile(r"/superset/log/")
"""Superset's frontend event log (``POST /superset/log/?explode=events``), which the login page sends as
it unloads: during a login its answer can replace the new session (:func:`login`)."""


def login(page, plan: dict, attempts: int = 3) -> None:
    """Log in through Superset's login form, until the session is the user's (``/api/v1/me/`` answers 200).

    Two races of a loaded machine can undo a login:
    - the form posts before its page finished loading, and the page stays on ``/login``;
    - the login page's event-log beacon (:data:`LOG_BEACON`), sent as the page unloads, reaches Superset
      without the new session, is redirected to the login page, and that page's answer sets an anonymous
      session cookie over the one the login just set. Seen in CI: the login's POST answered 302, then the
      welcome page's API calls answered 401 and the dashboard redirected to the login form.
    So the beacon is not sent during the login (it only logs page events), and the form is filled again,
    up to ``attempts`` times, until the session is the user's.
    """
    page.route(LOG_BEACON, lambda route: route.abort())
    try:
        for attempt in range(1, attempts + 1):
            page.goto(plan["base_url"] + "/login/", wait_until="networkidle")
            page.fill("#username", plan["user"])
            page.fill("#password", plan["password"])
            page.click('[data-test="login-button"]')
            try:
                page.wait_for_url(lambda url: "/login" not in url, timeout=60_000)
            except PlaywrightTimeoutError:
                if attempt == attempts:
                    raise
                print(f"login attempt {attempt} stayed on {page.url}; trying again", file=sys.stderr)
                continue
            try:  # the requests in flight end before the session is asked
                page.wait_for_load_state("networkidle", timeout=30_000)
            except PlaywrightTimeoutError:
                pass
            status = page.request.get(plan["base_url"] + "/api/v1/me/").status
            if status == 200:
                return
            if attempt == attempts:
                raise RuntimeError(f"logged in {attempts} times, and each time /api/v1/me/ answered {status}: "
                                   "the browser's session is not the user's")
            print(f"login attempt {attempt}: /api/v1/me/ answered {status} (the session cookie was replaced); "
                  "logging in again", file=sys.stderr)
    finally:
        page.unroute(LOG_BEACON)


def main() -> int:
    plan = json.load(sys.stdin)
    out_dir = Path(plan["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict = {"views": {}}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1750})
            page.set_default_timeout(90_000)
            login(page, plan)
            for view in plan["views"]:
                url = f"{plan['base_url']}/superset/dashboard/{view['slug']}/"
                if view.get("filters"):
                    url += "?native_filters=" + native_filters(view["filters"])
                started = time.monotonic()
                page.goto(url)
                page.wait_for_selector(HOLDER)
                shot = out_dir / f"{view['name']}.png"
                charts = capture(page, view["expect_charts"], plan.get("timeout_s", 120), shot)
                report["views"][view["name"]] = {
                    "title": page.title(), "charts": charts, "screenshot": str(shot),
                    "seconds": round(time.monotonic() - started, 1),
                }
        finally:
            browser.close()
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
