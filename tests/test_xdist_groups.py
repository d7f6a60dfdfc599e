"""``make test`` runs ``pytest -n 4 --dist loadgroup``: every test of one ``xdist_group`` runs on one worker,
so a group's session fixtures (the Spark cluster, a module's shared build) are made once and its heavy
tests never run beside each other. pytest 9.2 with pytest-xdist 3.8 ignores the groups without a word
(pytest-xdist issue #1386: the group is written into a node id pytest no longer reads), and ``make test``
still passes, only slower: this test fails instead.

Three tiny test files, two of them in one group, run in a pytest subprocess with this project's pytest and
xdist (their own rootdir and ini file, so neither this project's options nor its conftest apply).
"""

from __future__ import annotations

import re
import subprocess
import sys

GROUPED = """
import pytest
pytestmark = pytest.mark.xdist_group("shared")
{tests}
"""


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    body = "\n".join(f"def test_{i}():\n    pass\n" for i in range(6))
    (tmp_path / "test_one.py").write_text(GROUPED.format(tests=body))
    (tmp_path / "test_two.py").write_text(GROUPED.format(tests=body))
    (tmp_path / "test_free.py").write_text(body)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
                           "no:cacheprovider", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.findall(r"^\[(gw\d)\].*PASSED (test_\w+\.py)::", done.stdout, re.M)
    assert len(ran) == 18, done.stdout
    grouped = {worker for worker, module in ran if module != "test_free.py"}
    assert len(grouped) == 1, f"the group ran on {sorted(grouped)}:\n{done.stdout}"


class _Item:
    """What :func:`work_units.heaviest_first` reads of a collected test: its node id and its markers."""

    def __init__(self, nodeid: str, *marks: str, group: str | None = None):
        import pytest

        self.nodeid = nodeid
        self._marks = [getattr(pytest.mark, m) for m in marks]
        if group is not None:
            self._marks.append(pytest.mark.xdist_group(group))
        self._marks = [m.mark for m in self._marks]

    def iter_markers(self):
        return iter(self._marks)

    def get_closest_marker(self, name):
        return next((m for m in self._marks if m.name == name), None)


def test_the_heaviest_work_units_are_handed_out_first_each_whole_and_in_its_own_order():
    from work_units import heaviest_first

    items = [_Item("a.py::quick"), _Item("b.py::one", group="g"), _Item("c.py::slow_one", "slow"),
             _Item("d.py::spark_test", "spark"), _Item("b.py::two", "daemon", group="g"), _Item("e.py::quick"),
             _Item("f.py::cluster_test", "cluster"), _Item("h.py::x", group="s"), _Item("g.py::browser", "browser"),
             _Item("h.py::y", "spark", group="s"), _Item("i.py::spark_again", "spark")]
    ordered = [i.nodeid for i in heaviest_first(items)]
    # Spark first, the unit of more tests before the others; then the group holding a daemon test and the
    # browser test; then slow; then the rest; each group whole and in its order, ties in collection order
    assert ordered == ["h.py::x", "h.py::y", "d.py::spark_test", "f.py::cluster_test", "i.py::spark_again",
                       "b.py::one", "b.py::two", "g.py::browser", "c.py::slow_one", "a.py::quick", "e.py::quick"]
    assert sorted(ordered) == sorted(i.nodeid for i in items)
