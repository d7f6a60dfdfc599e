"""The settings surface: :meth:`Settings.from_env` reads every setting, the client's rate configuration
is derived from it, and a bad value is one line naming the variable (the texts other tests and users
rely on)."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from rank_pipeline.api import ClientConfig
from rank_pipeline.extract.source import Source
from rank_pipeline.settings import (
    ConfigurationError,
    EngineSettings,
    RateSettings,
    Settings,
    Shard,
    api_key,
    unset_for_demo,
)

BASE = {"RANK_TRACKER_BASE_URL": "https://api.example.com/v1", "RANK_TRACKER_API_KEY": "k1"}


def test_from_env_reads_every_setting(tmp_path):
    env = {**BASE, "RANK_PIPELINE_DATA_DIR": str(tmp_path), "RANK_TRACKER_RATE_PER_KEY": "120",
           "RANK_TRACKER_RATE_PER_IP": "240", "RANK_TRACKER_RATE_WINDOW_S": "300",
           "RANK_TRACKER_MAX_IN_FLIGHT": "4", "RANK_PIPELINE_SHARD": "1/3",
           "RANK_PIPELINE_SNAPSHOTS_URI": "s3://bucket/prefix", "RANK_PIPELINE_ENGINE": " Spark ",
           "RANK_PIPELINE_SPARK_MASTER": "spark://host:7077", "RANK_PIPELINE_LOCK_TIMEOUT_S": "0",
           "RANK_PIPELINE_STORAGE_VERSION": " v1.4.0 ", "RANK_PIPELINE_DASHBOARD_URL": "https://bi.test/",
           "RANK_PIPELINE_SCHEDULE_CRON": "0 5 * * *", "RANK_PIPELINE_FRESHNESS_HOURS": "2",
           "RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS": " 30 "}
    s = Settings.from_env(env)
    assert s.base_url == "https://api.example.com"
    assert s.rates == RateSettings(per_key_limit=120, per_ip_limit=240, window_s=300.0, max_in_flight=4)
    assert (s.shard, s.snapshots_uri) == (Shard(1, 3), "s3://bucket/prefix")
    assert s.engine == EngineSettings("spark", "spark://host:7077", str(tmp_path / "spark_warehouse"))
    assert (s.lock_timeout_s, s.storage_version, s.dashboard_url) == (0.0, "v1.4.0", "https://bi.test")
    assert (s.ops.schedule_cron, s.ops.freshness_hours) == ("0 5 * * *", 2.0)
    assert s.full_refresh_batch_days == 30
    assert "k1" not in repr(s)


def test_defaults(tmp_path):
    s = Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path)})
    assert s.uses_sandbox and s.shard is None and s.snapshots_uri is None
    assert s.rates == RateSettings(300, 600, 60.0, 16)
    assert s.engine == EngineSettings("duckdb", "local[2]", str(tmp_path / "spark_warehouse"))
    assert (s.lock_timeout_s, s.storage_version, s.dashboard_url) == (3600.0, "v1.0.0", "http://127.0.0.1:8088")
    assert s.duckdb_memory_limit is None
    assert s.full_refresh_batch_days == 0


def test_the_memory_limit_caps_the_warehouse_writer(tmp_path, monkeypatch):
    """``RANK_PIPELINE_DUCKDB_MEMORY_LIMIT`` is DuckDB's ``memory_limit`` on every writer connection of the
    build file; unset, DuckDB's default (80 % of RAM) stays."""
    from rank_pipeline.warehouse.warehouse_file import Warehouse

    def limit() -> str:
        with Warehouse(tmp_path / "build.duckdb", tmp_path / "published.duckdb").connect() as con:
            return con.execute("select current_setting('memory_limit')").fetchone()[0]

    monkeypatch.delenv("RANK_PIPELINE_DUCKDB_MEMORY_LIMIT", raising=False)
    default = limit()
    monkeypatch.setenv("RANK_PIPELINE_DUCKDB_MEMORY_LIMIT", " 300MiB ")
    assert Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path),
                              "RANK_PIPELINE_DUCKDB_MEMORY_LIMIT": "300MiB"}).duckdb_memory_limit == "300MiB"
    assert limit() == "300.0 MiB" != default
    monkeypatch.setenv("RANK_PIPELINE_DUCKDB_MEMORY_LIMIT", "25%")
    assert limit() not in ("300.0 MiB", default)
    # a value given in code is checked as the variable is: it becomes SQL
    with pytest.raises(ConfigurationError, match="'1GB; drop table x' is not an amount of memory"):
        Warehouse(tmp_path / "build.duckdb", tmp_path / "published.duckdb", memory_limit="1GB; drop table x")


def test_the_client_configuration_is_derived_from_the_rate_settings(tmp_path):
    # the rate fields are RateSettings' own: ClientConfig declares none of them again
    rate_fields = [f.name for f in fields(RateSettings)]
    assert rate_fields == ["per_key_limit", "per_ip_limit", "window_s", "max_in_flight"]
    assert [f.name for f in fields(ClientConfig)][:4] == rate_fields
    assert set(rate_fields) & set(inspect.get_annotations(ClientConfig)) == set()
    config = ClientConfig.from_rates(RateSettings(120, 240, 30.0, 4), per_page=10)
    assert (config.per_key_limit, config.per_ip_limit, config.window_s, config.max_in_flight) == (120, 240, 30.0, 4)
    assert (config.per_page, config.max_retry_s) == (10, 180.0)  # at least 180 s of retrying
    assert ClientConfig.from_rates(RateSettings(window_s=600.0)).max_retry_s == 600.0  # one window, at least
    assert ClientConfig.from_rates(RateSettings(), max_retry_s=90.0).max_retry_s == 90.0
    source = Source.from_settings(Settings.from_env({**BASE, "RANK_PIPELINE_DATA_DIR": str(tmp_path),
                                                     "RANK_TRACKER_RATE_WINDOW_S": "240"}))
    assert (source.client_config.window_s, source.client_config.max_retry_s) == (240.0, 240.0)
    assert ClientConfig() == ClientConfig.from_rates(RateSettings())


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("RANK_TRACKER_RATE_PER_KEY", "nan", "RANK_TRACKER_RATE_PER_KEY='nan' is not a whole number; set it between 1 "
     "and 100000 or unset it (default 300)"),
    ("RANK_TRACKER_RATE_WINDOW_S", "inf", "RANK_TRACKER_RATE_WINDOW_S='inf' is out of range; set it between 1 "
     "and 86400 or unset it (default 60)"),
    ("RANK_PIPELINE_SHARD", "3/3", "RANK_PIPELINE_SHARD='3/3' is not a shard: set it to i/n with 0 <= i < n <= "
     "1024 (e.g. 0/2 and 1/2 for two workers), or unset it to extract every account"),
    ("RANK_PIPELINE_SNAPSHOTS_URI", "s3://user:secret@bucket/p", "RANK_PIPELINE_SNAPSHOTS_URI='s3://bucket/p' "
     "holds credentials (use the AWS_* variables); set it to a local folder or s3://bucket/prefix (or unset it "
     "for <data folder>/snapshots)"),
    ("RANK_PIPELINE_SNAPSHOTS_URI", "s3://?region=x", "RANK_PIPELINE_SNAPSHOTS_URI='s3://' names no bucket; set "
     "it to a local folder or s3://bucket/prefix (or unset it for <data folder>/snapshots)"),
    ("RANK_PIPELINE_SNAPSHOTS_URI", "nosuchscheme://x", "RANK_PIPELINE_SNAPSHOTS_URI='nosuchscheme://x' uses the "
     "scheme 'nosuchscheme', which neither pyarrow nor fsspec supports; set it to a local folder or "
     "s3://bucket/prefix (or unset it for <data folder>/snapshots)"),
    ("RANK_PIPELINE_SHARDS", "0", "RANK_PIPELINE_SHARDS='0' is out of range; set it between 1 and 1024 or unset "
     "it (default 1)"),
    ("RANK_PIPELINE_SHARDS", "two", "RANK_PIPELINE_SHARDS='two' is not a whole number; set it between 1 and 1024 "
     "or unset it (default 1)"),
    ("RANK_PIPELINE_SHARD_ADDRESSES", "many", "RANK_PIPELINE_SHARD_ADDRESSES='many' is not shared or own: set "
     "shared when the shard runs leave from one IP address (each paces to 1/n of the per-IP ceiling), own when "
     "each has its own address, or unset it"),
    ("RANK_PIPELINE_ENGINE", "Sparkk", "RANK_PIPELINE_ENGINE='sparkk' is not one of duckdb, spark; unset it for "
     "duckdb"),
    ("RANK_PIPELINE_SPARK_MASTER", "spark:/host:7077", "RANK_PIPELINE_SPARK_MASTER='spark:/host:7077' is not a "
     "Spark master URL; use local[N], spark://host:port (a standalone cluster), sc://host:port (Spark Connect), "
     "yarn or k8s://..."),
    ("RANK_PIPELINE_LOCK_TIMEOUT_S", "-1", "RANK_PIPELINE_LOCK_TIMEOUT_S='-1' is not a number of seconds; set it "
     "to 0 (refuse at once) or more (default 3600)"),
    ("RANK_PIPELINE_DUCKDB_MEMORY_LIMIT", "8G", "RANK_PIPELINE_DUCKDB_MEMORY_LIMIT='8G' is not an amount of memory; "
     "set it to one such as 8GB, 6GiB or 50% (of the machine's RAM), or unset it for DuckDB's default (80% of RAM)"),
    ("RANK_PIPELINE_DUCKDB_MEMORY_LIMIT", "0GB", "RANK_PIPELINE_DUCKDB_MEMORY_LIMIT='0GB' is not an amount of "
     "memory; set it to one such as 8GB, 6GiB or 50% (of the machine's RAM), or unset it for DuckDB's default (80% "
     "of RAM)"),
    ("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS", "30d", "RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS='30d' is not a number "
     "of days; set it to a whole number such as 30 (an incremental model's full refresh builds that many days at a "
     "time), or 0 or unset for one build"),
    ("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS", "-1", "RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS='-1' is not a number "
     "of days; set it to a whole number such as 30 (an incremental model's full refresh builds that many days at a "
     "time), or 0 or unset for one build"),
])
def test_a_bad_value_is_one_line_naming_the_variable(tmp_path, variable, value, message):
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path), variable: value})
    assert str(caught.value) == message


def test_keys_are_read_through_the_settings_module_only_when_asked(tmp_path):
    env = {"RANK_TRACKER_BASE_URL": "https://api.example.com", "RANK_TRACKER_ACCOUNTS": "acme,globex",
           "RANK_TRACKER_API_KEY_ACME": "ka", "RANK_PIPELINE_DATA_DIR": str(tmp_path)}
    with pytest.raises(ConfigurationError, match="RANK_TRACKER_BASE_URL is set but RANK_TRACKER_API_KEY_GLOBEX "
                                                 "is not") as caught:
        Settings.from_env(env)
    assert "ka" not in str(caught.value)
    s = Settings.from_env({**env, "RANK_TRACKER_API_KEY_GLOBEX": "kg"})
    assert [api_key(a, {**env, "RANK_TRACKER_API_KEY_GLOBEX": "kg"}) for a in s.accounts] == ["ka", "kg"]
    assert api_key(s.accounts[1], env) == ""


def test_the_demo_drops_the_vendor_and_a_non_duckdb_engine():
    env = {"RANK_TRACKER_BASE_URL": "https://api.example.com", "RANK_PIPELINE_ENGINE": "spark", "OTHER": "1"}
    assert unset_for_demo(env) == ["RANK_TRACKER_BASE_URL", "RANK_PIPELINE_ENGINE"]
    assert env == {"OTHER": "1"}
    env = {"RANK_TRACKER_BASE_URL": "", "RANK_PIPELINE_ENGINE": "DuckDB"}
    assert unset_for_demo(env) == []  # an empty base URL is removed without a note; duckdb is kept
    assert env == {"RANK_PIPELINE_ENGINE": "DuckDB"}


def test_shards_under_dagster_and_their_budgets(tmp_path):
    """``RANK_PIPELINE_SHARDS=n``: n shard partitions; on one shared address each paces to 1/n of the
    per-IP ceiling, on their own addresses each to the whole ceiling; per-key budgets stay whole."""
    from rank_pipeline.extract.source import Source
    from rank_pipeline.settings import Shard, ShardPlan

    folder = {"RANK_PIPELINE_DATA_DIR": str(tmp_path)}
    assert Settings.from_env(folder).shards is None
    assert Settings.from_env({**folder, "RANK_PIPELINE_SHARDS": "1"}).shards is None
    plan = Settings.from_env({**folder, "RANK_PIPELINE_SHARDS": "3", "RANK_TRACKER_RATE_PER_IP": "600"}).shards
    assert plan == ShardPlan(3, own_addresses=False)
    assert [s.key for s in plan.shards] == ["0-of-3", "1-of-3", "2-of-3"]
    assert Shard.from_key("2-of-3") == Shard(2, 3) and Shard(2, 3).manifest_name == "_manifest.shard-2-of-3.json"
    settings = Settings.from_env({**folder, "RANK_PIPELINE_SHARDS": "3", "RANK_TRACKER_RATE_PER_IP": "600",
                                  "RANK_TRACKER_RATE_PER_KEY": "250"})
    source = Source.from_settings(settings).for_shard(Shard(1, 3), settings.shards.rates(settings.rates))
    assert (source.shard, source.client_config.per_ip_limit, source.client_config.per_key_limit) == (Shard(1, 3), 200, 250)
    own = Settings.from_env({**folder, "RANK_PIPELINE_SHARDS": "3", "RANK_PIPELINE_SHARD_ADDRESSES": "own"})
    assert own.shards.rates(own.rates).per_ip_limit == 600
    with pytest.raises(ValueError, match="is not a shard partition key"):
        Shard.from_key("3-of-3")
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({**folder, "RANK_PIPELINE_SHARDS": "2", "RANK_PIPELINE_SHARD": "0/2"})
    assert str(caught.value) == (
        "RANK_PIPELINE_SHARD and RANK_PIPELINE_SHARDS are both set: RANK_PIPELINE_SHARDS=2 makes Dagster run every "
        "shard of a day as a partition; RANK_PIPELINE_SHARD=i/n is for one `rank-pipeline extract` worker started "
        "by hand. Unset one")
