"""The sensor that marks killed runs failed, evaluated by ``dagster-daemon``.

A run's worker process may die without reporting its end (``kill -9``, the out-of-memory killer, a
power cut, a service manager killing the daemon with its code server). When only the worker died, the
code server that spawned it marks the run failed within a second. When the code server died too, or
the machine rebooted, nothing of Dagster's default run launcher notices (its run monitoring cannot
check a started run's worker): this sensor marks such runs failed from their process tags
(:func:`rank_pipeline.defs.dead_runs.fail_dead_runs`), within :data:`~rank_pipeline.settings.SENSOR_INTERVAL_S`
seconds (plus the daemon's own loop) once the daemon runs.
"""

import dagster as dg

from rank_pipeline.defs.dead_runs import fail_dead_runs
from rank_pipeline.settings import SENSOR_INTERVAL_S


@dg.sensor(
    name="fail_dead_runs_sensor",
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Marks failed the runs of this host still started whose process is gone (killed), from "
                "their rank_pipeline/pid, /host and /boot_id tags. Launches no run.",
)
def fail_dead_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Mark dead runs failed; the skip reason lists them (shown on the sensor's page in the UI)."""
    marked = fail_dead_runs(context.instance, log=context.log.warning)
    return dg.SkipReason(f"marked failed: {', '.join(marked)}" if marked else "no killed run")
