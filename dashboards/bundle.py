"""Build a Superset import bundle (zip of YAML) from ``dashboards/dashboards.yml`` and ``datasets/*.sql``.

Runs in the dashboards' own environment (``.venv-superset``, made by ``make dashboard-env``), never in the
pipeline's. Output: a zip in Superset's v1 import format (``metadata.yaml``, ``databases/``,
``datasets/<database>/``, ``charts/``, ``dashboards/``), imported with ``superset import-dashboards``.

The database entry points Superset read-only at the published warehouse (``duckdb:///<path>``, DuckDB
``read_only`` through ``engine_params.connect_args``; DML off). Connections are never pooled: Superset 6.1
creates every engine with ``poolclass=NullPool`` (``Database.get_sqla_engine(nullpool=True)``, and no
caller passes False), and no pool settings are given here, so every query opens the file anew and sees
each newly published file (the pipeline replaces it atomically; tests/dashboards checks a day published
while Superset runs appears on reload). Dataset columns are read from the warehouse (``DESCRIBE`` of each dataset's SQL),
so the warehouse must be published before the bundle is built. Object uuids are derived from names, so a
re-import overwrites the same dashboards instead of adding copies.

Usage: ``python dashboards/bundle.py --warehouse data/warehouse.duckdb --out bundle.zip``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import yaml

HERE = Path(__file__).resolve().parent
SPEC = HERE / "dashboards.yml"
DATASETS_DIR = HERE / "datasets"
NAMESPACE = uuid.UUID("6f1d3c52-8a57-4d0e-9a43-2c6a1b8e0d11")
VERSION = "1.0.0"
INCLUDE = re.compile(r"\{\{\s*include\('([\w.-]+\.sql)'\)\s*\}\}")
TEMPORAL_TYPES = ("DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE")


class BundleError(ValueError):
    """The dashboards spec is inconsistent; the message names the entry and what to fix."""


def object_uuid(kind: str, name: str) -> str:
    """Stable uuid of a database, dataset, chart or dashboard named ``name``."""
    return str(uuid.uuid5(NAMESPACE, f"rank-pipeline/{kind}/{name}"))


def dataset_sql(file_name: str, seen: tuple[str, ...] = ()) -> str:
    """The SQL of ``datasets/<file_name>`` with every ``{{ include('x.sql') }}`` inlined."""
    if file_name in seen:
        raise BundleError(f"datasets/{file_name} includes itself through {' -> '.join(seen)}")
    path = DATASETS_DIR / file_name
    if not path.is_file():
        raise BundleError(f"dataset SQL file {path} does not exist; add it or fix dashboards.yml")
    text = path.read_text().strip().rstrip(";")
    return INCLUDE.sub(lambda m: dataset_sql(m.group(1), (*seen, file_name)), text)


def describe(con: duckdb.DuckDBPyConnection, name: str, sql: str) -> list[tuple[str, str]]:
    """``[(column, DuckDB type)]`` of a dataset's SQL run on the warehouse."""
    try:
        return [(r[0], r[1]) for r in con.execute(f"describe {sql}").fetchall()]
    except duckdb.Error as exc:
        raise BundleError(f"dataset {name}: its SQL does not run on the warehouse: {exc}") from exc


def metric(spec: dict[str, str]) -> dict[str, Any]:
    """An ad-hoc SQL metric as Superset's chart params hold it."""
    return {"expressionType": "SQL", "sqlExpression": spec["sql"], "label": spec["label"],
            "hasCustomLabel": True, "optionName": "metric_" + re.sub(r"\W+", "_", spec["label"]).lower()}


def time_filter(time_column: str | None) -> list[dict[str, Any]]:
    """The temporal-range filter a dashboard's date-range filter fills in."""
    if not time_column:
        return []
    return [{"expressionType": "SIMPLE", "subject": time_column, "operator": "TEMPORAL_RANGE",
             "comparator": "No filter", "clause": "WHERE"}]


DEFAULT_STYLE: dict[str, Any] = {
    # d3 formats: numbers thousands-separated with at most 2 decimals, dates without a time of day
    "formats": {"number": ",.2~f", "date": "%Y-%m-%d", "timestamp": "%Y-%m-%d %H:%M:%S"},
    "colors": {},
    "label_colors": {},
}
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "FLOAT", "REAL", "DOUBLE", "DECIMAL")
OPERATORS = {">", "<", "=", "≥", "≤", "≠", "is true", "is false"}


def style_of(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's ``formats``, ``colors`` and ``label_colors`` over :data:`DEFAULT_STYLE`, with every
    ``label_colors`` value resolved to a colour (a name from ``colors`` or a CSS colour)."""
    style = {key: {**value, **(spec.get(key) or {})} for key, value in DEFAULT_STYLE.items()}
    style["label_colors"] = {label: color(style, c, f"label_colors.{label}")
                             for label, c in style["label_colors"].items()}
    return style


def color(style: dict[str, Any], name: str, where: str) -> str:
    """A colour name of the spec's ``colors`` (e.g. ``winner``) or a literal ``#rrggbb``."""
    if name in style["colors"]:
        return style["colors"][name]
    if re.fullmatch(r"#[0-9a-fA-F]{6}", str(name)):
        return name
    raise BundleError(f"{where}: colour {name!r} is neither one of colors ({', '.join(style['colors'])}) "
                      "nor a #rrggbb value")


def is_numeric(duckdb_type: str) -> bool:
    return duckdb_type.upper().split("(")[0] in NUMERIC_TYPES


def column_config(chart: dict[str, Any], style: dict[str, Any], columns: dict[str, str],
                  shown: list[str]) -> dict[str, dict[str, str]]:
    """Superset's table ``column_config``: a d3 number format for every numeric column and metric shown
    (the chart's ``formats`` entry, else the default number format) and a d3 time format for every
    temporal column (dates without a time of day, timestamps with it)."""
    formats = style["formats"]
    own = chart.get("formats", {})
    for col in own:
        if col not in shown:
            raise BundleError(f"chart {chart['name']}: formats names {col!r}, which the table does not show")
    config: dict[str, dict[str, str]] = {}
    for col in shown:
        kind = columns.get(col)
        if kind is not None and kind.upper() in TEMPORAL_TYPES:
            config[col] = {"d3TimeFormat": own.get(col) or (formats["date"] if kind.upper() == "DATE"
                                                            else formats["timestamp"])}
        elif kind is None or is_numeric(kind):  # metrics (kind None) are numbers
            config[col] = {"d3NumberFormat": own.get(col, formats["number"])}
    return config


def conditional_formatting(chart: dict[str, Any], style: dict[str, Any], shown: list[str]) -> list[dict[str, Any]]:
    """Superset's table ``conditional_formatting`` from the chart's ``highlight`` rules
    (``{column, op, value, color}``): the cell's text takes the colour where ``column op value`` holds."""
    rules = []
    for rule in chart.get("highlight", []):
        where = f"chart {chart['name']}: highlight {rule}"
        if rule.get("column") not in shown:
            raise BundleError(f"{where}: column {rule.get('column')!r} is not shown by the table")
        if rule.get("op") not in OPERATORS:
            raise BundleError(f"{where}: op must be one of {', '.join(sorted(OPERATORS))}")
        entry = {"column": rule["column"], "operator": rule["op"], "colorScheme": color(style, rule["color"], where),
                 "toTextColor": True, "useGradient": False}
        if "value" in rule:
            entry["targetValue"] = rule["value"]
        rules.append(entry)
    return rules


def chart_params(chart: dict[str, Any], time_column: str | None, columns: dict[str, str],
                 style: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """``(viz_type, params)`` of one chart of the spec; ``columns`` maps the dataset's columns to their
    DuckDB types, ``style`` is :func:`style_of` the spec."""
    style = style or style_of({})
    formats = style["formats"]
    kind = chart["kind"]
    for col in [*chart.get("group_by", []), *chart.get("columns", []), *([chart["x"]] if "x" in chart else [])]:
        if col not in columns:
            raise BundleError(f"chart {chart['name']}: column {col!r} is not in dataset {chart['dataset']}")
    common: dict[str, Any] = {"adhoc_filters": time_filter(time_column), "extra_form_data": {},
                              "dashboards": []}
    if kind == "big_number":
        return "big_number_total", {**common, "metric": metric(chart["metric"]), "header_font_size": 0.4,
                                    "subheader_font_size": 0.15,
                                    "y_axis_format": chart.get("format", formats["number"]),
                                    "time_format": formats["date"]}
    if kind in ("line", "bar"):
        x = chart.get("x", time_column)
        temporal = x == time_column
        number_format = chart.get("format", formats["number"])
        params = {**common, "x_axis": x, "metrics": [metric(m) for m in chart["metrics"]],
                  "groupby": chart.get("group_by", []), "row_limit": 10000, "order_desc": True,
                  "truncate_metric": True, "show_legend": True, "legendType": "scroll",
                  "legendOrientation": "top", "rich_tooltip": True, "y_axis_format": number_format,
                  "tooltipValuesFormat": number_format, "x_axis_time_format": formats["date"],
                  "tooltipTimeFormat": formats["date"], "markerEnabled": True, "markerSize": 6,
                  "sort_series_type": "sum", "comparison_type": "values"}
        if temporal:
            params["time_grain_sqla"] = "P1D"
        else:
            params["x_axis_sort"] = chart["metrics"][0]["label"]
            params["x_axis_sort_asc"] = False
            params["row_limit"] = chart.get("limit", 25)
        if chart.get("series_limit"):
            # the series shown: the top `series_limit` by `series_order` (default: the first metric)
            by = chart.get("series_order", chart["metrics"][0])
            params.update(limit=chart["series_limit"], series_limit=chart["series_limit"],
                          timeseries_limit_metric=metric(by), series_limit_metric=metric(by), order_desc=True)
        if chart.get("y_inverse"):
            # ECharts options merged over Superset's (its "ECharts options" control): 1 at the top
            params["echart_options"] = "{yAxis: {inverse: true, min: 1, minInterval: 1}}"
        if kind == "bar":
            params["stack"] = "Stack" if chart.get("stacked") else None
            params["orientation"] = "vertical"
            params["show_value"] = not temporal
            return "echarts_timeseries_bar", params
        return "echarts_timeseries_line", params
    if kind == "table":
        order = chart.get("order_by")
        params = {**common, "row_limit": chart.get("limit", 100), "server_page_length": 10,
                  "table_timestamp_format": formats["date"], "show_cell_bars": False, "include_search": True,
                  "allow_rearrange_columns": False, "color_pn": True}
        if "columns" in chart:
            shown = list(chart["columns"])
            params.update(query_mode="raw", all_columns=chart["columns"], groupby=[], metrics=[],
                          order_by_cols=[json.dumps([order[0], order[1] == "asc"])] if order else [])
        else:
            metrics = [metric(m) for m in chart["metrics"]]
            shown = [*chart["group_by"], *(m["label"] for m in metrics)]
            params.update(query_mode="aggregate", groupby=chart["group_by"], metrics=metrics, all_columns=[],
                          order_desc=bool(order and order[1] == "desc"))
            if order:
                by = next((m for m in metrics if m["label"] == order[0]), None)
                if by is None:
                    raise BundleError(f"chart {chart['name']}: order_by {order[0]!r} is not one of its metrics")
                params["timeseries_limit_metric"] = by
        if "page_length" in chart:  # rows per page (0: all on one page); default Superset's
            params["page_length"] = chart["page_length"]
        params["column_config"] = column_config(chart, style, columns, shown)
        params["conditional_formatting"] = conditional_formatting(chart, style, shown)
        return "table", params
    raise BundleError(f"chart {chart['name']}: unknown kind {kind!r} (big_number, line, bar, table)")


def build(warehouse: Path, out: Path, spec_path: Path = SPEC) -> dict[str, Any]:
    """Write the import zip to ``out``; returns a summary ``{dashboards: {slug: [chart names]}}``.

    Raises:
        BundleError: an unknown dataset, column, filter or chart kind in the spec, or a dataset whose SQL
            does not run on ``warehouse``.
    """
    spec = yaml.safe_load(spec_path.read_text())
    style = style_of(spec)
    db_name = spec["database"]
    db_uuid = object_uuid("database", db_name)
    root = "rank_pipeline_dashboards"
    files: dict[str, Any] = {
        "metadata.yaml": {"version": VERSION, "type": "Dashboard",
                          "timestamp": datetime.now(UTC).isoformat()},
        f"databases/{slug(db_name)}.yaml": {
            "database_name": db_name,
            "sqlalchemy_uri": f"duckdb:///{warehouse.resolve()}",
            "cache_timeout": None, "expose_in_sqllab": True, "allow_run_async": False, "allow_ctas": False,
            "allow_cvas": False, "allow_dml": False, "allow_file_upload": False,
            "extra": {"engine_params": {"connect_args": {"read_only": True}}, "metadata_params": {},
                      "schemas_allowed_for_file_upload": [], "allows_virtual_table_explore": True},
            "uuid": db_uuid, "version": VERSION,
        },
    }
    datasets: dict[str, dict[str, Any]] = {}
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        for name, ds in spec["datasets"].items():
            sql = dataset_sql(ds["sql"])
            cols = describe(con, name, sql)
            time_column = ds.get("time_column", "snapshot_date")
            names = dict(cols)
            if time_column and time_column not in names:
                raise BundleError(f"dataset {name}: time column {time_column!r} is not among its columns")
            datasets[name] = {"uuid": object_uuid("dataset", name), "time_column": time_column, "columns": names}
            files[f"datasets/{slug(db_name)}/{name}.yaml"] = {
                "table_name": name, "main_dttm_col": time_column,
                "description": f"dashboards/datasets/{ds['sql']}", "default_endpoint": None, "offset": 0,
                "cache_timeout": None, "catalog": None, "schema": None, "sql": sql, "params": None,
                "template_params": None, "filter_select_enabled": True, "fetch_values_predicate": None,
                "extra": None, "normalize_columns": False, "always_filter_main_dttm": False,
                "uuid": datasets[name]["uuid"],
                "metrics": [{"metric_name": "count", "verbose_name": "COUNT(*)", "metric_type": "count",
                             "expression": "COUNT(*)", "description": None, "d3format": None,
                             "currency": None, "extra": None, "warning_text": None}],
                "columns": [{"column_name": c, "verbose_name": None, "is_dttm": t.upper() in TEMPORAL_TYPES,
                             "is_active": True, "type": t, "advanced_data_type": None, "groupby": True,
                             "filterable": True, "expression": None, "description": None,
                             "python_date_format": None, "extra": None} for c, t in cols],
                "version": VERSION, "database_uuid": db_uuid,
            }
    finally:
        con.close()

    summary: dict[str, Any] = {"dashboards": {}}
    next_id = 1
    for dash in spec["dashboards"]:
        position: dict[str, Any] = {
            "DASHBOARD_VERSION_KEY": "v2",
            "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
            "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": [], "parents": ["ROOT_ID"]},
            "HEADER_ID": {"id": "HEADER_ID", "type": "HEADER", "meta": {"text": dash["title"]}},
        }
        chart_ids: dict[str, tuple[int, str]] = {}
        for r, row in enumerate(dash["rows"]):
            row_id = f"ROW-{r}"
            position["GRID_ID"]["children"].append(row_id)
            position[row_id] = {"type": "ROW", "id": row_id, "children": [], "parents": ["ROOT_ID", "GRID_ID"],
                                "meta": {"background": "BACKGROUND_TRANSPARENT"}}
            for chart in row:
                if chart["dataset"] not in datasets:
                    raise BundleError(f"chart {chart['name']}: unknown dataset {chart['dataset']!r}")
                ds = datasets[chart["dataset"]]
                viz_type, params = chart_params(chart, ds["time_column"], ds["columns"], style)
                chart_uuid = object_uuid("chart", f"{dash['slug']}/{chart['name']}")
                chart_id = next_id
                next_id += 1
                chart_ids[chart["name"]] = (chart_id, chart["dataset"])
                files[f"charts/{dash['slug']}__{chart['name']}.yaml"] = {
                    "slice_name": chart["title"], "description": None, "certified_by": None,
                    "certification_details": None, "viz_type": viz_type,
                    "params": {**params, "viz_type": viz_type, "datasource": f"{chart_id}__table"},
                    "query_context": None, "cache_timeout": None, "uuid": chart_uuid, "version": VERSION,
                    "dataset_uuid": ds["uuid"],
                }
                comp_id = f"CHART-{chart['name']}"
                position[row_id]["children"].append(comp_id)
                height = 30 if chart["kind"] == "big_number" else 60
                position[comp_id] = {"type": "CHART", "id": comp_id, "children": [],
                                     "parents": ["ROOT_ID", "GRID_ID", row_id],
                                     "meta": {"width": chart.get("width", 6), "height": height,
                                              "chartId": chart_id, "uuid": chart_uuid,
                                              "sliceName": chart["title"]}}
        filters = []
        for key in dash["filters"]:
            if key not in spec["filters"]:
                raise BundleError(f"dashboard {dash['slug']}: unknown filter {key!r}")
            flt = spec["filters"][key]
            base = {"id": f"NATIVE_FILTER-{dash['slug']}-{key}", "name": flt["name"], "type": "NATIVE_FILTER",
                    "description": "", "cascadeParentIds": [],
                    "defaultDataMask": {"extraFormData": {}, "filterState": {}, "ownState": {}}}
            if flt.get("type") == "time":
                excluded = [cid for cid, ds in chart_ids.values() if not datasets[ds]["time_column"]]
                filters.append({**base, "filterType": "filter_time", "targets": [{}], "controlValues": {},
                                "scope": {"rootPath": ["ROOT_ID"], "excluded": excluded}})
                continue
            if flt["dataset"] not in datasets or flt["column"] not in datasets[flt["dataset"]]["columns"]:
                raise BundleError(f"filter {key}: column {flt['column']!r} is not in dataset {flt['dataset']!r}")
            excluded = [cid for cid, ds in chart_ids.values() if flt["column"] not in datasets[ds]["columns"]]
            filters.append({
                **base, "filterType": "filter_select",
                "targets": [{"datasetUuid": datasets[flt["dataset"]]["uuid"], "column": {"name": flt["column"]}}],
                "controlValues": {"enableEmptyFilter": False, "defaultToFirstItem": False, "multiSelect": True,
                                  "searchAllOptions": False, "inverseSelection": False},
                "scope": {"rootPath": ["ROOT_ID"], "excluded": excluded},
            })
        files[f"dashboards/{dash['slug']}.yaml"] = {
            "dashboard_title": dash["title"], "description": None, "css": "", "slug": dash["slug"],
            "certified_by": None, "certification_details": None, "published": True,
            "uuid": object_uuid("dashboard", dash["slug"]), "position": position,
            "metadata": {"native_filter_configuration": filters, "color_scheme": "supersetColors",
                         "refresh_frequency": 0, "expanded_slices": {},
                         "label_colors": style["label_colors"],
                         "timed_refresh_immune_slices": [], "cross_filters_enabled": False,
                         "default_filters": "{}", "chart_configuration": {}, "shared_label_colors": [],
                         "color_scheme_domain": []},
            "version": VERSION,
        }
        summary["dashboards"][dash["slug"]] = {"title": dash["title"],
                                               "charts": [c["title"] for row in dash["rows"] for c in row]}
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(f"{root}/{name}", yaml.safe_dump(content, sort_keys=False, allow_unicode=True))
    return summary


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, required=True, help="the published DuckDB file")
    parser.add_argument("--out", type=Path, required=True, help="the zip to write")
    args = parser.parse_args(argv)
    if not args.warehouse.is_file():
        print(f"no published warehouse at {args.warehouse}: run `make demo` (or the pipeline) first",
              file=sys.stderr)
        return 2
    try:
        summary = build(args.warehouse, args.out)
    except BundleError as exc:
        print(f"dashboards/dashboards.yml: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
