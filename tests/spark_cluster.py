"""A Spark standalone cluster (and a Spark Connect server) on this machine, from the pyspark wheel.

For the tests, the scale benchmark and anyone trying the pipeline on a cluster without one: a master
and N workers, each a JVM started with the wheel's ``bin/spark-class`` on loopback (127.0.0.1), with
the Java :func:`rank_pipeline.transform.spark_session.java_home` picks, in a work folder of their own::

    with start_cluster(workers=2) as cluster:        # waits until the master reports 2 ALIVE workers
        os.environ["RANK_PIPELINE_SPARK_MASTER"] = cluster.master_url   # spark://127.0.0.1:<port>
        ...
    # every JVM of the cluster (master, workers, their executors) is stopped here

    with start_connect_server(cluster.master_url) as server:   # sbin/start-connect-server.sh
        server.url                                              # sc://127.0.0.1:<port>

Every daemon runs in a process group of its own under a small ``sh`` guard that reads its standard
input: :meth:`Daemons.stop` (or the end of the ``with`` block) closes that pipe and the guard sends
SIGTERM to its whole group (the JVM and, for a worker, its executors), then SIGKILL after
``stop_timeout`` seconds. If the Python process that started them dies, however it dies, the kernel
closes the pipe and the guards stop the daemons the same way: no JVM is left behind.

Workers run executors with this Python (``PYSPARK_PYTHON``) and in UTC (``TZ``, ``-Duser.timezone``);
:func:`rank_pipeline.transform.spark_session.spark_session` sets the same on the driver side. Paths the
executors read (snapshots, the Spark warehouse) must be readable by every worker: here they share the
machine's disk. A ``spark-defaults.conf`` in the caller's ``SPARK_CONF_DIR`` is copied into the daemons'
configuration folder, so the Connect server's application reads the same defaults as the caller's own
(the tests' C1-only JVMs, ``tests/spark-conf/``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ConnectServer", "Daemons", "StandaloneCluster", "alive_workers", "free_port", "spark_home",
           "start_cluster", "start_connect_server"]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
LOOPBACK = "127.0.0.1"

TEST_SPARK_CONF_DIR = Path(__file__).resolve().parent / "spark-conf"
"""The tests' ``SPARK_CONF_DIR`` (``tests/conftest.py`` sets it for the whole test session): its
``spark-defaults.conf`` makes every driver and executor JVM of the tests compile with C1 only
(``-XX:TieredStopAtLevel=1`` as ``spark.*.defaultJavaOptions``, with a 256 MB code cache: C1's own 48 MB
fills within a minute), and its drivers list the tests' local folders themselves instead of starting
a listing job for more than 32 paths (the file's comment has the measurement). Most of the tests' Spark applications
live for a door's run, under a minute of work, where C2's compilations cost more CPU than they win:
measured 2026-11-26 on this 2-core machine, quiet, the three Spark door tests of
``test_spark_doors.py`` used 267 CPU-seconds with it and 423 without. ``make bench-*`` does not read it
(the benchmarks measure Spark as users run it); the scale benchmark's smoke test, a subprocess of the tests,
does."""

TEST_DAEMON_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Java options of the master and workers :func:`start_cluster` starts under :data:`TEST_SPARK_CONF_DIR` (the
tests' ``SPARK_CONF_DIR``; not the benchmarks'): C1 only and the serial collector, as the tests' drivers and
executors. They launch executors and answer heartbeats; C2 and G1's threads cost more than that work.
Measured 2026-11-28 on this 2-core machine (load 5), a master and two workers started and left idle for
90 s: 11.4 CPU-seconds against 18.9 with the JVM's defaults."""

LONG_SESSION_CONF = {"spark.driver.defaultJavaOptions": "-XX:+UseSerialGC",
                     "spark.executor.defaultJavaOptions": "-XX:+UseSerialGC"}
"""Settings of a Spark session that builds the models many times over (``test_any_order_spark.py``'s four
builds: ``SPARK_SESSION_CONF`` of its module, read by ``tests/transform/conftest.py``'s ``spark``): Spark's
own JIT (C1 then C2), not :data:`TEST_SPARK_CONF_DIR`'s C1 only. Over many builds C2 pays: the any-order
test used 256 CPU-seconds with C2 and 316 with C1 only. Over one build it does not: the equality module (a
full build of the 35-day world, its yml tests and the unit tests) used 149 CPU-seconds with C1 only and 199
with C2 (on this 2-core machine, quiet)."""

INTERPRETED_CONF = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
"""Settings of an in-process session that runs hundreds of small queries over tiny tables
(``SPARK_SESSION_CONF`` of ``test_any_order_spark.py`` and ``test_spark_equality.py``): Spark evaluates each plan interpreted instead of
generating and compiling Java for it (Janino). At the tests' sizes the compiling is much of a query's work and
the rows are few: measured 2026-11-28 on this 2-core machine (load 12 to 18, JVM CPU-seconds, local[2], C1
only), the 34 SQL unit tests on Spark 51 against 59 to 67 with code generation, a full build of every model
over four days of the conftest world 50 against 54 to 56. Spark's interpreted and generated evaluations give the
same rows (Spark tests both); the user's doors on Spark (``test_spark_doors.py``, ``test_backfill_doors.py``,
the scale benchmark) keep Spark's defaults, code generation on. Side by side from one start (load 11 to 30),
with against without: the any-order module 269 against 352 CPU-seconds of its process tree, the equality
module 312 against 338, each passing."""

TINY_DATA_CONF = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1"}
"""Settings of an in-process session over the tests' tiny tables (``SPARK_SESSION_CONF`` of
``test_any_order_spark.py`` and ``test_spark_equality.py``, with :data:`INTERPRETED_CONF`): no adaptive query
execution (it plans each stage again after running the one before, for tables of a few hundred rows) and one
shuffle partition (fewer tasks a stage). Measured 2026-11-28 on this 2-core machine (load 10 to 16, JVM
CPU-seconds, local[2], C1 only, interpreted), the equality module's work (a build of every model over the
35-day world, every yml test, every SQL unit test) 135 against 157: build 53 against 63, yml tests 42 against
47, unit tests 27 against 35. The same rows: the modules compare them with DuckDB's. The user's doors keep
Spark's defaults (``spark_session``: adaptive on)."""

# reads stdin until EOF (the parent closed the pipe or died), then stops the whole process group
_GUARD = '"$@" & cat >/dev/null; kill -TERM 0'


def spark_home() -> Path:
    """The pyspark package's folder: its ``bin/spark-class``, ``sbin/`` scripts and ``jars/``.

    Raises:
        RuntimeError: pyspark is not installed (``pip install 'rank-pipeline[spark]'``).
    """
    try:
        import pyspark
    except ImportError as exc:
        raise RuntimeError("a local Spark cluster needs pyspark: install the project's spark extra "
                           "(pip install -e '.[spark]')") from exc
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _environment(work_dir: Path) -> dict[str, str]:
    from rank_pipeline.transform.spark_session import java_home

    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    home = java_home()
    if home is not None:
        env["JAVA_HOME"] = home
    daemon_options = "-Duser.timezone=UTC"
    caller = os.environ.get("SPARK_CONF_DIR")
    if caller and Path(caller).resolve() == TEST_SPARK_CONF_DIR:
        daemon_options += f" {TEST_DAEMON_JAVA_OPTIONS}"  # the tests' master and workers as their drivers and executors
    env.update({
        "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK, "SPARK_LOG_DIR": str(work_dir / "logs"),
        "SPARK_PID_DIR": str(work_dir / "pids"), "SPARK_CONF_DIR": str(work_dir / "conf"),
        "SPARK_NO_DAEMONIZE": "1", "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
        "TZ": "UTC", "SPARK_DAEMON_JAVA_OPTS": daemon_options, "SPARK_DAEMON_MEMORY": "512m",
    })
    (work_dir / "conf").mkdir(parents=True, exist_ok=True)
    if caller and (Path(caller) / "spark-defaults.conf").is_file():  # the caller's Spark defaults hold here too
        shutil.copyfile(Path(caller) / "spark-defaults.conf", work_dir / "conf" / "spark-defaults.conf")
    return env


@dataclass
class Daemons:
    """Processes started under the stdin guard (module docstring), each in its own process group."""

    work_dir: Path
    stop_timeout: float = 30.0
    procs: list[subprocess.Popen] = field(default_factory=list)
    _owned_dir: bool = False

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        """Start ``argv`` under the guard; its output goes to ``<work dir>/logs/<name>.out``."""
        logs = self.work_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / f"{name}.out", "ab") as out:
            proc = subprocess.Popen(["sh", "-c", _GUARD, "sh", *argv], stdin=subprocess.PIPE, stdout=out,
                                    stderr=subprocess.STDOUT, env=env, cwd=self.work_dir, start_new_session=True)
        self.procs.append(proc)
        return proc

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of every daemon's output (for an error message)."""
        out = []
        for path in sorted((self.work_dir / "logs").glob("*")):
            if path.is_file():
                out.append(f"--- {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(out)

    def stop(self) -> None:
        """Stop every daemon's process group (SIGTERM, then SIGKILL after :attr:`stop_timeout` s); idempotent."""
        for proc in self.procs:
            if proc.stdin is not None and not proc.stdin.closed:
                try:
                    proc.stdin.close()  # the guard sends SIGTERM to its group
                except OSError:
                    pass
        deadline = time.monotonic() + self.stop_timeout
        for proc in self.procs:
            _stop_group(proc, deadline)
        self.procs.clear()
        if self._owned_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_group(proc: subprocess.Popen, deadline: float) -> None:
    pgid = proc.pid  # start_new_session: the guard leads its group
    if _group_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    while _group_alive(pgid) and time.monotonic() < deadline:
        proc.poll()
        time.sleep(0.2)
    if _group_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def alive_workers(web_url: str, timeout: float = 5.0) -> int:
    """How many workers the master's web UI (``<web_url>/json``) reports ALIVE; 0 when it does not answer."""
    try:
        with urllib.request.urlopen(f"{web_url}/json", timeout=timeout) as response:
            state = json.load(response)
    except (OSError, ValueError):
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@dataclass
class StandaloneCluster(Daemons):
    """A running standalone master and its workers (:func:`start_cluster`).

    Attributes:
        master_url: ``spark://127.0.0.1:<port>``, for ``RANK_PIPELINE_SPARK_MASTER``.
        web_url: the master's web UI, ``http://127.0.0.1:<port>`` (``/json``: its state).
        workers: how many workers were started.
    """

    master_url: str = ""
    web_url: str = ""
    workers: int = 0


def _temp_dir(work_dir: str | Path | None, prefix: str) -> tuple[Path, bool]:
    if work_dir is not None:
        path = Path(work_dir).resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path, False
    return Path(tempfile.mkdtemp(prefix=prefix)).resolve(), True


def _wait(what: str, ready, daemons: Daemons, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        dead = [p for p in daemons.procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            tail = daemons.log_tail()
            daemons.stop()
            raise RuntimeError(f"{what} {'exited' if dead else f'not ready after {timeout:.0f} s'}; "
                               f"its log:\n{tail}")
        time.sleep(0.5)


def start_cluster(workers: int = 2, *, cores: int = 1, memory: str = "1g", work_dir: str | Path | None = None,
                  timeout: float = 180.0, stop_timeout: float = 30.0) -> StandaloneCluster:
    """Start a standalone master and ``workers`` workers on 127.0.0.1 (free ports) and wait until the
    master reports them all ALIVE.

    Args:
        workers: how many worker JVMs (1 or more).
        cores: cores each worker offers (``--cores``).
        memory: memory each worker offers (``--memory``, e.g. ``1g``); an executor takes 1g by default.
        work_dir: the folder for logs and the workers' scratch (``--work-dir``); default a new temporary
            folder, removed by :meth:`StandaloneCluster.stop`.
        timeout: seconds to wait for the master and the workers.
        stop_timeout: seconds :meth:`StandaloneCluster.stop` waits after SIGTERM before SIGKILL.

    Returns:
        the running cluster; use it as a context manager, or call ``stop()``.

    Raises:
        ValueError: ``workers`` or ``cores`` below 1.
        RuntimeError: pyspark or Java is missing, or a daemon exited or was not ready within ``timeout``
            (the message carries the end of its log; everything started is stopped).
    """
    if workers < 1 or cores < 1:
        raise ValueError(f"a cluster needs at least 1 worker of at least 1 core (got workers={workers}, "
                         f"cores={cores})")
    path, owned = _temp_dir(work_dir, "rank-pipeline-spark-cluster-")
    env = _environment(path)
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, web = free_port(), free_port()
    cluster = StandaloneCluster(work_dir=path, stop_timeout=stop_timeout, _owned_dir=owned,
                                master_url=f"spark://{LOOPBACK}:{port}", web_url=f"http://{LOOPBACK}:{web}",
                                workers=workers)
    try:
        cluster.spawn("master", [spark_class, MASTER_CLASS, "--host", LOOPBACK, "--port", str(port),
                                 "--webui-port", str(web)], env)
        _wait("the Spark master", lambda: _answers(cluster.web_url), cluster, timeout)
        for i in range(workers):
            scratch = path / f"worker-{i}"
            scratch.mkdir(exist_ok=True)
            cluster.spawn(f"worker-{i}", [spark_class, WORKER_CLASS, cluster.master_url, "--host", LOOPBACK,
                                          "--port", str(free_port()), "--webui-port", str(free_port()),
                                          "--cores", str(cores), "--memory", memory, "--work-dir", str(scratch)],
                          env)
        _wait(f"{workers} Spark worker(s)", lambda: alive_workers(cluster.web_url) >= workers, cluster, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _answers(web_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{web_url}/json", timeout=5):
            return True
    except OSError:
        return False


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((LOOPBACK, port)) == 0


@dataclass
class ConnectServer(Daemons):
    """A running Spark Connect server (:func:`start_connect_server`).

    Attributes:
        url: ``sc://127.0.0.1:<port>``, for ``RANK_PIPELINE_SPARK_MASTER``.
        master: the master its Spark application runs on.
    """

    url: str = ""
    master: str = ""


def start_connect_server(master: str = "local[2]", *, conf: dict[str, str] | None = None,
                         work_dir: str | Path | None = None, timeout: float = 180.0,
                         stop_timeout: float = 30.0) -> ConnectServer:
    """Start the wheel's Spark Connect server (``sbin/start-connect-server.sh``, in the foreground) on
    127.0.0.1 and a free port, its application on ``master`` (``local[N]`` or a standalone cluster's
    ``spark://`` URL), in UTC; wait until it accepts connections.

    ``conf``: more ``--conf`` settings of the server's application (e.g. ``spark.sql.shuffle.partitions``:
    static settings cannot be changed by a Connect client).

    Raises:
        RuntimeError: pyspark or Java is missing, or the server exited or did not listen within
            ``timeout`` seconds (the message carries the end of its log).
    """
    path, owned = _temp_dir(work_dir, "rank-pipeline-spark-connect-")
    env = _environment(path)
    port = free_port()
    settings = {"spark.connect.grpc.binding.address": LOOPBACK, "spark.connect.grpc.binding.port": str(port),
                "spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK,
                "spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
                "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
                "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
                "spark.pyspark.python": sys.executable, **(conf or {})}
    argv = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--master", master]
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    server = ConnectServer(work_dir=path, stop_timeout=stop_timeout, _owned_dir=owned,
                           url=f"sc://{LOOPBACK}:{port}", master=master)
    try:
        server.spawn("connect-server", argv, env)
        _wait("the Spark Connect server", lambda: _port_open(port), server, timeout)
    except BaseException:
        server.stop()
        raise
    return server
