"""Every environment variable the pipeline reads, ``(name, description)``, in the order of
docs/reference/settings.md (:mod:`rank_pipeline.cli.reference`); all optional, in docstring markup.
"""

from __future__ import annotations

__all__ = ["VARIABLES"]

VARIABLES: tuple[tuple[str, str], ...] = (
    ("RANK_TRACKER_BASE_URL",
     "the vendor's base address (spec: ``{base_url}``; a trailing ``/v1`` is removed). Unset: the "
     'embedded sandbox is started on 127.0.0.1.'),
    ("RANK_TRACKER_API_KEY",
     'the key of the single account ``default``; several keys of the account comma-separated '
     '(``key1,key2``): a key pool, requests spread over the keys and a key rejected mid-run dropped.'),
    ("RANK_TRACKER_ACCOUNTS",
     'several accounts: ``acme,globex``; each key in ``RANK_TRACKER_API_KEY_<NAME>`` (upper case), '
     'also a key list.'),
    ("RANK_PIPELINE_DATA_DIR", 'snapshots and warehouse folder (default ``./data``).'),
    ("RANK_PIPELINE_SNAPSHOTS_URI",
     'where the Parquet snapshots live (default ``<data dir>/snapshots``): a folder, or '
     '``s3://bucket/prefix`` (credentials and endpoint from the ``AWS_*`` variables) or another '
     'pyarrow/fsspec scheme; see :mod:`rank_pipeline.snapshots.storage`.'),
    ("RANK_PIPELINE_SHARD",
     '``i/n``: this worker extracts only the accounts of shard ``i`` of ``n`` '
     '(:mod:`rank_pipeline.settings.sharding`); unset: every account. For a worker started by hand '
     '(``rank-pipeline extract``).'),
    ("RANK_PIPELINE_SHARDS",
     "``n`` (2..1024): Dagster runs each day's extraction as ``n`` shard partitions (day x shard "
     '``i-of-n``) and the models once all have committed (:class:`ShardPlan`); unset or 1: one '
     'extraction per day.'),
    ("RANK_PIPELINE_SHARD_ADDRESSES",
     '``shared`` (default) or ``own``: with ``RANK_PIPELINE_SHARDS``, whether the shard runs of a '
     'day leave from one IP address (each paces to 1/n of ``RANK_TRACKER_RATE_PER_IP``) or each '
     'from its own (full ceiling).'),
    ("RANK_PIPELINE_MODELS_DIR",
     "the SQL models project (default: inside a user's project, its models over the package's; "
     'else the ``dbt_like_sql/`` shipped with the package); see :func:`models_dir`.'),
    ("RANK_TRACKER_RATE_PER_KEY", 'requests per key per window (spec "Limits": 300), 1..100000.'),
    ("RANK_TRACKER_RATE_PER_IP", 'requests per IP address per window (spec "Limits": 600), 1..100000.'),
    ("RANK_TRACKER_RATE_WINDOW_S", 'the window in seconds (spec: one minute), 1..86400.'),
    ("RANK_TRACKER_MAX_IN_FLIGHT", 'concurrent requests per run (default 16), 1..1024.'),
    ("RANK_PIPELINE_LOCK_TIMEOUT_S",
     'seconds a run waits for another run of the same data folder (default 3600; used by '
     ':mod:`rank_pipeline.folder_lock`).'),
    ("RANK_PIPELINE_STORAGE_VERSION",
     'DuckDB storage version of the published warehouse (default ``v1.0.0``: DuckDB 1.0+ opens it; '
     'checked by ``warehouse.Warehouse``).'),
    ("RANK_PIPELINE_DUCKDB_MEMORY_LIMIT",
     "the memory the warehouse's DuckDB writer may use (``8GB``, ``6GiB``, ``50%`` of RAM; default DuckDB's, "
     '80 % of RAM); past it, work spills to ``<build file>.tmp``. Set it below what the machine has '
     'free when other processes share it.'),
    ("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS",
     "an incremental model's full refresh (``rank-pipeline rebuild``, a first build) in steps of this many days, "
     'the first built whole, each later step replacing its days as a daily build does (default 0: every day in '
     'one build). Set it (30, say) when one build of a big history runs out of memory.'),
    ("RANK_PIPELINE_DASHBOARD_URL",
     "the dashboards' address linked from ``warehouse/published`` (default http://127.0.0.1:8088; "
     '``make dashboard``).'),
    ("RANK_SANDBOX_SHAPE",
     'the shape the embedded sandbox serves its records in: ``default``, ``vendor-b``, '
     '``vendor-c``, ``vendor-d``, ``vendor-e``, ``engine-upper`` or ``language-string``, '
     'optionally ``NAME@YYYY-MM-DD`` from that simulated day on '
     '(``rank_pipeline.sandbox.shapes``).'),
    ("RANK_PIPELINE_PARTITION_START",
     "the first daily partition (``YYYY-MM-DD``, UTC); overrides the component's "
     "``partition_start``; both unset: the data folder's first committed snapshot day, else the "
     'day of ``rank-pipeline init`` (``[tool.rank_pipeline] started``), else today. A start after '
     'the first committed snapshot day is refused (it would drop materialized days).'),
    ("RANK_PIPELINE_SCHEDULE_CRON", 'when the daily schedule ticks (5-field cron, default ``15 6 * * *``).'),
    ("RANK_PIPELINE_SCHEDULE_TIMEZONE", "the schedule's time zone (IANA name, default ``UTC``)."),
    ("RANK_PIPELINE_FRESHNESS_HOURS",
     'how old the marts and ``warehouse/published`` may be before their freshness policy fails '
     "(default 26), 1/60 (one minute, Dagster's smallest window) .. 8760."),
    ("RANK_PIPELINE_ALERT_URLS",
     'where alerts go: comma-separated Apprise URLs (``mailto://``, ``json://``, Slack, Teams, '
     '...); unset: no alerts. Secret, like keys.'),
    ("RANK_PIPELINE_KEYWORDS_FILE",
     'a keywords file (``rank_pipeline.keywords``): the daily job writes its planned rows to '
     '``raw.keywords_file`` and its asset check ``matches_tracked_keywords`` fails when the file '
     'and the tracked keywords differ; unset: no check, an empty table.'),
    ("RANK_PIPELINE_ENGINE",
     'which engine builds the SQL models: ``duckdb`` (default) or ``spark`` '
     '(:mod:`rank_pipeline.settings.engine`).'),
    ("RANK_PIPELINE_SPARK_MASTER", 'the Spark master URL (default ``local[2]``).'),
    ("RANK_PIPELINE_SPARK_WAREHOUSE_URI",
     'where Spark writes the model tables as Parquet (default ``<data dir>/spark_warehouse``).'),
    ("RANK_PIPELINE_DAGSTER_PG_URL",
     "Dagster's instance storage on PostgreSQL "
     '(``postgresql+psycopg2://user:password@host:5432/db``); unset: SQLite under '
     '``DAGSTER_HOME``. Secret, like keys.'),
)
