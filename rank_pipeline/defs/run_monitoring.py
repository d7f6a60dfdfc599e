"""The sensor that marks killed runs failed, evaluated by ``dagster-daemon`` every
:data:`~rank_pipeline.settings.SENSOR_INTERVAL_S` seconds, from the runs' process tags
(:func:`rank_pipeline.defs.dead_runs.fail_dead_runs`). Why Dagster's own monitoring misses them:
docs/concepts/dagster.md, "Killed runs".
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
