"""A data folder that cannot be written, as a user meets it: ``rank-pipeline run`` as a subprocess.

On a small tmpfs mounted by the test (root only): the folder full, the file system remounted read-only,
and the folder owned by someone else for an unprivileged process. Each ends with exit status 3 and one
line on stderr naming the folder, and the warehouse an earlier run published is byte-identical after.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from support import command_env, rank_pipeline_argv, require, require_root

from rank_pipeline.operations.data_folder import DATA_FOLDER_EXIT_STATUS

# root: every test reads the data folder on a tmpfs the module mounts (tests/conftest.py checks for root first)
pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.xdist_group("data_folder_faults"),
              pytest.mark.timeout(600)]

FIRST_DAY, NEXT_DAY = "2026-11-01", "2026-11-02"


def _cli(data_dir: Path, *args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``rank-pipeline *args`` on ``data_dir`` with a clean environment, run through the command ``prefix`` (e.g.
    ``runuser -u nobody --``: as an unprivileged process), killed past 300 s."""
    env = command_env({"RANK_PIPELINE_DATA_DIR": str(data_dir)})
    return subprocess.run([*prefix, *rank_pipeline_argv(), *args], env=env, capture_output=True, text=True,
                          timeout=300)


def _digest(data_dir: Path) -> dict[str, str]:
    """sha256 of the published warehouse and of every snapshot file: what earlier runs left."""
    files = [data_dir / "warehouse.duckdb", *sorted((data_dir / "snapshots").rglob("*"))]
    return {str(p.relative_to(data_dir)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.is_file()}


@pytest.fixture(scope="module")
def published():
    """A 64 MiB tmpfs holding a data folder with one published day; unmounted after."""
    require_root("mounting a tmpfs to test a full or read-only data folder")
    require(shutil.which("mount"), "mount is not installed: cannot mount a tmpfs for a full or read-only data folder")
    mnt = Path(tempfile.mkdtemp(prefix="rank-pipeline-tmpfs-", dir="/tmp"))
    mnt.chmod(0o755)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", str(mnt)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        mnt.rmdir()
        require(False, f"cannot mount a tmpfs here ({mounted.stderr.strip()}); a container needs CAP_SYS_ADMIN")
    try:
        data = mnt / "data"
        done = _cli(data, "run", "--date", FIRST_DAY)
        assert done.returncode == 0, done.stdout + done.stderr
        yield mnt, data, _digest(data)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(mnt)], capture_output=True)
        subprocess.run(["umount", str(mnt)], check=False)
        shutil.rmtree(mnt, ignore_errors=True)


def _assert_one_line(done: subprocess.CompletedProcess, data: Path, words: str) -> None:
    assert done.returncode == DATA_FOLDER_EXIT_STATUS, (done.returncode, done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: the data folder {data} {words}"), lines[0]
    assert "RANK_PIPELINE_DATA_DIR" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr


def test_a_full_data_folder_ends_in_one_line_and_keeps_the_warehouse(published):
    mnt, data, before = published
    filler = mnt / "filler"
    try:
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:  # fill the file system to the last block
            for size in (1 << 20, 4096, 1):
                try:
                    while os.write(fd, b"\0" * size):
                        pass
                except OSError:
                    pass
        finally:
            os.close(fd)
        assert shutil.disk_usage(mnt).free < 65536
        done = _cli(data, "run", "--date", NEXT_DAY)
        _assert_one_line(done, data, "is full")
        assert "free space" in done.stderr
    finally:
        filler.unlink(missing_ok=True)
    assert _digest(data) == before


def test_a_read_only_data_folder_ends_in_one_line_and_keeps_the_warehouse(published):
    mnt, data, before = published
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    try:
        done = _cli(data, "run", "--date", NEXT_DAY)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
    _assert_one_line(done, data, "is on a read-only file system")
    assert "remount it read-write" in done.stderr
    assert _digest(data) == before


def _unprivileged() -> tuple[tuple[str, ...], bool]:
    """A command prefix running as an unprivileged process, and whether it is user ``nobody``.

    ``runuser -u nobody`` when that user can run this Python; otherwise (the interpreter under a
    private home, as root's pyenv) root's uid with every capability dropped (``setpriv``), which
    cannot write a folder owned by another user either.
    """
    runuser = ("runuser", "-u", "nobody", "--")
    if shutil.which("runuser"):
        ok = subprocess.run([*runuser, *rank_pipeline_argv(), "--version"], capture_output=True)
        if ok.returncode == 0:
            return runuser, True
    if shutil.which("setpriv"):
        return ("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"), False
    require(False, "neither runuser nor setpriv is available to run as an unprivileged process")


def test_a_data_folder_the_user_cannot_write_ends_in_one_line_and_keeps_the_warehouse(published):
    _mnt, data, before = published
    prefix, as_nobody = _unprivileged()
    if not as_nobody:  # the folder belongs to someone else; this process keeps root's uid, without privilege
        subprocess.run(["chown", "-R", "nobody:nogroup", str(data)], check=True)
    try:
        done = _cli(data, "run", "--date", NEXT_DAY, prefix=prefix)
    finally:
        subprocess.run(["chown", "-R", "root:root", str(data)], check=True)
    _assert_one_line(done, data, "is not writable by user")
    assert "write permission" in done.stderr
    assert _digest(data) == before
