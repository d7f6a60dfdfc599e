"""The DevTools driver the browser tests use (:mod:`cdp`): a wait that meets a navigation polls again.

A click that follows a link returns before the new page loads; the next evaluation can then run in the
page being replaced, and Chromium answers "Inspected target navigated or closed". That answer is not the
page being wrong, so ``wait_for`` polls again; any other error still raises.
"""

from __future__ import annotations

import pytest
from cdp import Chromium, NavigationRace, chromium_path
from support import require


@pytest.mark.browser
def test_an_evaluation_cut_short_by_a_navigation_is_a_race_and_wait_for_polls_through_it(tmp_path):
    require(chromium_path(), "Debian's chromium is not installed (make test installs it: Makefile target browser)")
    (tmp_path / "a.html").write_text("<html><title>A</title><body>a</body></html>")
    (tmp_path / "b.html").write_text("<html><title>B</title><body>b</body></html>")
    a, b = (tmp_path / "a.html").as_uri(), (tmp_path / "b.html").as_uri()
    leave = f"setTimeout(() => {{ location.href = '{b}' }}, 50)"
    slow_title = "new Promise(r => setTimeout(() => r(document.title === 'B' && document.title), 400))"
    with Chromium(tmp_path / "profile") as browser:
        browser.goto(a)
        with pytest.raises(NavigationRace, match="navigated or closed"):
            browser.evaluate(f"{leave}; {slow_title}")
        browser.goto(a)
        browser.evaluate(leave)
        assert browser.wait_for(slow_title) == "B"
        with pytest.raises(RuntimeError, match="no_such_name") as raised:
            browser.wait_for("no_such_name.x")
        assert not isinstance(raised.value, NavigationRace)
