"""How the pipeline runs unattended (:class:`OpsSettings`): the schedule, the first daily partition,
freshness, alerts and Dagster's storage."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from rank_pipeline.settings.values import ConfigurationError, _number

__all__ = ["DAGSTER_PG_URL_ENV", "DEFAULT_FRESHNESS_HOURS", "DEFAULT_SCHEDULE_CRON", "DEFAULT_SCHEDULE_TIMEZONE",
           "MIN_FRESHNESS_HOURS", "PARTITION_START_ENV", "SENSOR_INTERVAL_S", "OpsSettings",
           "start_partitions_at"]

PARTITION_START_ENV = "RANK_PIPELINE_PARTITION_START"
"""The first daily partition (``YYYY-MM-DD``, UTC): overrides the component's ``partition_start``; both
unset, the first committed snapshot day of the data folder, else the project's ``init`` day, else today
(:func:`rank_pipeline.snapshots.partition_start`)."""

DAGSTER_PG_URL_ENV = "RANK_PIPELINE_DAGSTER_PG_URL"
"""The PostgreSQL URL of Dagster's storage; ``dagster.yaml`` names this variable (Dagster reads it when
the instance loads) so the URL, a secret, is never copied into a file."""

DEFAULT_SCHEDULE_CRON = "15 6 * * *"
DEFAULT_SCHEDULE_TIMEZONE = "UTC"
DEFAULT_FRESHNESS_HOURS = 26.0
MIN_FRESHNESS_HOURS = 1 / 60
"""One minute: the smallest fail window of a Dagster freshness policy."""

SENSOR_INTERVAL_S = 30
"""Seconds between two evaluations of each of the project's Dagster sensors (``minimum_interval_seconds``):
the alert sensors, the one that marks killed runs failed, the one that starts a day's run once its shards
committed."""


@dataclass(frozen=True)
class OpsSettings:
    """How the pipeline runs unattended: schedule, freshness, alerts, Dagster's storage. ``alert_urls`` and
    ``dagster_pg_url`` may hold secrets: never log or store them (``repr`` hides them).
    """

    schedule_cron: str = DEFAULT_SCHEDULE_CRON
    schedule_timezone: str = DEFAULT_SCHEDULE_TIMEZONE
    freshness_hours: float = DEFAULT_FRESHNESS_HOURS
    alert_urls: tuple[str, ...] = field(default=(), repr=False)
    dagster_pg_url: str | None = field(default=None, repr=False)
    partition_start: date | None = None
    partition_start_from: str = PARTITION_START_ENV

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OpsSettings:
        """Read ``RANK_PIPELINE_PARTITION_START`` (None: from the data folder), ``_SCHEDULE_*``,
        ``_FRESHNESS_HOURS``, ``_ALERT_URLS`` and ``_DAGSTER_PG_URL``.

        Raises ConfigurationError: a start that is no ``YYYY-MM-DD``, a cron not of 5 valid fields, an unknown
        time zone, freshness hours out of 1/60..8760, an alert URL without ``scheme://``, a PostgreSQL URL not
        ``postgresql+psycopg2://`` (never repeating a URL).
        """
        env = os.environ if env is None else env
        cron = (env.get("RANK_PIPELINE_SCHEDULE_CRON") or "").strip() or DEFAULT_SCHEDULE_CRON
        if len(cron.split()) != 5 or not croniter.is_valid(cron):
            raise ConfigurationError(
                f"RANK_PIPELINE_SCHEDULE_CRON={cron!r} is not a 5-field cron expression; set it like "
                f"'{DEFAULT_SCHEDULE_CRON}' (minute hour day month weekday) or unset it"
            )
        tz = (env.get("RANK_PIPELINE_SCHEDULE_TIMEZONE") or "").strip() or DEFAULT_SCHEDULE_TIMEZONE
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(
                f"RANK_PIPELINE_SCHEDULE_TIMEZONE={tz!r} is not a known time zone; set an IANA name such as "
                "'UTC' or 'Europe/Berlin', or unset it"
            ) from None
        hours = float(_number(env, "RANK_PIPELINE_FRESHNESS_HOURS", DEFAULT_FRESHNESS_HOURS, float,
                              MIN_FRESHNESS_HOURS, 8760.0))
        urls = tuple(u.strip() for u in (env.get("RANK_PIPELINE_ALERT_URLS") or "").split(",") if u.strip())
        for i, url in enumerate(urls, 1):
            if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://\S", url):
                raise ConfigurationError(
                    f"RANK_PIPELINE_ALERT_URLS: entry {i} is not a notification URL (scheme://...); give "
                    "comma-separated Apprise URLs such as mailto://... or json://host:port/path"
                )
        pg = (env.get(DAGSTER_PG_URL_ENV) or "").strip() or None
        if pg is not None and not re.match(r"^postgresql\+psycopg2://\S", pg):
            raise ConfigurationError(  # SQLAlchemy 2.1 reads a plain postgresql:// as psycopg 3, which
                # dagster-postgres does not support; its psycopg2 driver must be named
                "RANK_PIPELINE_DAGSTER_PG_URL is not a postgresql+psycopg2:// URL; set it like "
                "postgresql+psycopg2://user:password@host:5432/dagster, or unset it to keep SQLite"
            )
        return cls(schedule_cron=cron, schedule_timezone=tz, freshness_hours=hours, alert_urls=urls,
                   dagster_pg_url=pg, partition_start=_partition_start(env))


def start_partitions_at(day: date) -> None:
    """Set ``RANK_PIPELINE_PARTITION_START`` to ``day`` in this process (the demo's first day, for the
    definitions it loads; :meth:`OpsSettings.from_env` reads it)."""
    os.environ[PARTITION_START_ENV] = day.isoformat()


def _partition_start(env: Mapping[str, str]) -> date | None:
    """``RANK_PIPELINE_PARTITION_START`` as a date, None when unset or blank.
    Raises ConfigurationError: not a ``YYYY-MM-DD`` date.
    """
    raw = (env.get(PARTITION_START_ENV) or "").strip()
    if not raw:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
            raise ValueError(raw)
        return date.fromisoformat(raw)
    except ValueError:
        raise ConfigurationError(f"{PARTITION_START_ENV}={raw!r} is not a date: set it like '2026-03-01' "
                                 "(YYYY-MM-DD, the first daily partition) or unset it") from None
