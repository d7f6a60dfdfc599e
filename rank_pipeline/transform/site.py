"""The models' documentation as a static HTML site (``rank-pipeline docs``): an index with the model graph,
one page per relation with columns, lineage, tests and SQL, and a search; no network, deterministic.

Pages: docs/concepts/models.md, "The docs site".
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rank_pipeline.transform.dependencies import SEED_SCHEMA
from rank_pipeline.transform.lineage import ColumnRef, ProjectLineage, project_lineage
from rank_pipeline.transform.nodes import ColumnSpec, Model, Seed, TestSpec
from rank_pipeline.transform.project import Project

RawDoc = tuple[str, Mapping[str, str]]
"""A raw table's description and ``{column: description}`` (:func:`write_site`)."""

__all__ = ["SiteReport", "page_name", "write_site"]

_SCHEMA_ORDER = ("raw", SEED_SCHEMA, "staging", "marts")


@dataclass(frozen=True)
class SiteReport:
    """What :func:`write_site` wrote: the folder, its pages, and the models sqlglot could not analyse."""

    out_dir: Path
    pages: int
    lineage_errors: Mapping[str, str]

    @property
    def index(self) -> Path:
        return self.out_dir / "index.html"


def page_name(qualified: str) -> str:
    """``marts.agg_domain_daily`` -> ``marts.agg_domain_daily.html``."""
    return f"{qualified}.html"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _anchor(column: str) -> str:
    return "c-" + column


def _ref_link(ref: ColumnRef, known: set[str]) -> str:
    text = _e(ref.label)
    if ref.relation not in known:
        return f"<code>{text}</code>"
    return f'<a class="col" href="{_e(page_name(ref.relation))}#{_e(_anchor(ref.column))}"><code>{text}</code></a>'


def _rel_link(qualified: str, known: set[str]) -> str:
    if qualified not in known:
        return f"<code>{_e(qualified)}</code>"
    return f'<a href="{_e(page_name(qualified))}"><code>{_e(qualified)}</code></a>'


def _test_label(test: TestSpec) -> str:
    return f"{test.describe()}{' (blocking)' if test.blocking else ''}"


def _page(title: str, body: str, search_hint: str = "") -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)} · rank-pipeline models</title>
<link rel="stylesheet" href="assets/site.css">
</head>
<body>
<header>
  <a class="home" href="index.html">rank-pipeline models</a>
  <div class="search">
    <input id="search" type="search" placeholder="Search models and columns{_e(search_hint)}" autocomplete="off"
           aria-label="Search models and columns">
    <ol id="results" hidden></ol>
  </div>
</header>
<main>
{body}
</main>
<script src="assets/search-index.js"></script>
<script src="assets/site.js"></script>
</body>
</html>
"""


_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #fff; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1.2em; background: #1d2330; }
header a.home { color: #fff; font-weight: 600; text-decoration: none; }
.search { position: relative; flex: 1; max-width: 40em; }
#search { width: 100%; padding: .35em .6em; font-size: 15px; border-radius: 4px; border: 0; }
#results { position: absolute; z-index: 10; left: 0; right: 0; margin: .2em 0 0; padding: 0; list-style: none;
           background: #fff; border: 1px solid #ccd; max-height: 70vh; overflow: auto; box-shadow: 0 4px 12px #0003; }
#results li a { display: block; padding: .3em .6em; text-decoration: none; color: inherit; }
#results li a:hover, #results li a:focus { background: #eef3ff; }
#results .kind { color: #667; font-size: 12px; margin-left: .5em; }
#results .desc { display: block; color: #556; font-size: 12px; }
main { padding: 1em 1.6em 3em; }
h1 code, h2 code { font-size: inherit; }
table { border-collapse: collapse; width: 100%; margin: .5em 0 1.5em; }
th, td { text-align: left; vertical-align: top; border-bottom: 1px solid #e3e6ee; padding: .35em .5em; }
th { background: #f4f6fa; }
tr:target { background: #fff7d6; }
td.lineage { font-size: 13px; max-width: 38em; overflow-wrap: anywhere; }
td.lineage div { margin-bottom: .2em; }
.label { color: #667; font-size: 12px; }
pre { background: #f6f8fa; padding: .8em; overflow: auto; font-size: 13px; }
.meta li { margin: .15em 0; }
svg a:hover rect { stroke: #1d2330; stroke-width: 2; }
.schema-raw { fill: #e9e2f7; } .schema-seeds { fill: #fde8c8; } .schema-staging { fill: #d9ecff; }
.schema-marts { fill: #d8f3df; }
"""

_JS = r"""
(function () {
  var index = window.SEARCH_INDEX || [];
  var box = document.getElementById('search');
  var list = document.getElementById('results');
  function score(entry, terms) {
    var name = entry.name.toLowerCase(), hay = (entry.name + ' ' + entry.description).toLowerCase();
    var total = 0;
    for (var i = 0; i < terms.length; i++) {
      var t = terms[i];
      if (hay.indexOf(t) < 0) return -1;
      var last = name.split('.').pop();
      total += last === t ? 100 : name.indexOf(t) >= 0 ? 10 : 1;
    }
    return total + (entry.kind === 'column' ? 0 : 5);
  }
  function search(query) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!terms.length) return [];
    var hits = [];
    for (var i = 0; i < index.length; i++) {
      var s = score(index[i], terms);
      if (s >= 0) hits.push([s, i]);
    }
    hits.sort(function (a, b) { return b[0] - a[0] || index[a[1]].name.localeCompare(index[b[1]].name); });
    return hits.slice(0, 40).map(function (h) { return index[h[1]]; });
  }
  function show(query) {
    var hits = search(query);
    list.innerHTML = '';
    hits.forEach(function (entry) {
      var li = document.createElement('li');
      var a = document.createElement('a');
      a.href = entry.url;
      a.className = 'hit';
      a.setAttribute('data-name', entry.name);
      a.textContent = entry.name;
      var kind = document.createElement('span');
      kind.className = 'kind';
      kind.textContent = entry.kind;
      a.appendChild(kind);
      var desc = document.createElement('span');
      desc.className = 'desc';
      desc.textContent = entry.description;
      a.appendChild(desc);
      li.appendChild(a);
      list.appendChild(li);
    });
    if (!hits.length && query.trim()) {
      var li = document.createElement('li');
      li.className = 'none';
      li.textContent = 'No model or column matches';
      list.appendChild(li);
    }
    list.hidden = !query.trim();
  }
  window.searchModels = search;
  box.addEventListener('input', function () { show(box.value); });
  box.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter') { var first = list.querySelector('a'); if (first) window.location.href = first.href; }
    if (ev.key === 'Escape') { box.value = ''; show(''); }
  });
  var q = new URLSearchParams(window.location.search).get('q');
  if (q) { box.value = q; show(q); }
})();
"""


def _types(project: Project) -> dict[str, dict[str, str]]:
    from rank_pipeline.transform.unit_tests import relation_types

    try:
        return {q: dict(cols) for q, cols in relation_types(project).items()}
    except Exception:  # a model that does not build on empty inputs: the yml's types only
        return {}


def _depths(project: Project) -> dict[str, int]:
    depth = {s: 0 for s in project.sources}
    depth.update({s.qualified_name: 0 for s in project.seeds.values()})
    for model in project.topological_order():
        depth[model.qualified_name] = 1 + max((depth.get(d, 0) for d in model.depends_on), default=0)
    return depth


def _graph_svg(project: Project, known: set[str]) -> str:
    depth = _depths(project)
    layers: dict[int, list[str]] = {}
    for name in sorted(depth, key=lambda q: (_SCHEMA_ORDER.index(q.split(".")[0]), q)):
        layers.setdefault(depth[name], []).append(name)
    width, height, gap_x, gap_y = 250, 22, 300, 30
    pos = {name: (12 + d * gap_x, 12 + i * gap_y) for d, names in layers.items() for i, name in enumerate(names)}
    total_w = 12 + (max(layers) + 1) * gap_x
    total_h = 24 + max(len(v) for v in layers.values()) * gap_y
    edges, nodes = [], []
    for model in project.topological_order():
        x2, y2 = pos[model.qualified_name]
        for dep in sorted(model.depends_on):
            if dep not in pos:
                continue
            left, top = pos[dep]
            x1, y1, y2c = left + width, top + height / 2, y2 + height / 2
            mid = (x1 + x2) / 2
            edges.append(f'<path d="M{x1},{y1} C{mid},{y1} {mid},{y2c} {x2},{y2c}" fill="none" stroke="#9aa3b5" '
                         f'stroke-width="1"><title>{_e(dep)} → {_e(model.qualified_name)}</title></path>')
    for name, (x, y) in pos.items():
        schema = name.split(".")[0]
        nodes.append(f'<a href="{_e(page_name(name))}" data-relation="{_e(name)}"><rect x="{x}" y="{y}" '
                     f'width="{width}" height="{height}" rx="4" class="schema-{schema}" stroke="#8890a0"/>'
                     f'<text x="{x + 8}" y="{y + 15}" font-size="12">{_e(name)}</text></a>')
    return (f'<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
            f'viewBox="0 0 {total_w} {total_h}" role="img" aria-label="model graph">'
            + "".join(edges) + "".join(nodes) + "</svg>")


def _columns_rows(qualified: str, columns: list[tuple[str, str, str, list[str]]], lineage: ProjectLineage,
                  known: set[str], with_lineage: bool) -> list[str]:
    rows = ['<table class="columns"><thead><tr><th>column</th><th>type</th><th>description</th><th>tests</th>'
            + ("<th>lineage</th>" if with_lineage else "") + "</tr></thead><tbody>"]
    for name, type_, description, tests in columns:
        cells = [f'<td><code>{_e(name)}</code></td>', f"<td><code>{_e(type_)}</code></td>",
                 f"<td>{_e(description)}</td>", "<td>" + "<br>".join(_e(t) for t in tests) + "</td>"]
        if with_lineage:
            parts = []
            direct = sorted(lineage.direct.get((qualified, name), ()))
            sources = sorted(lineage.sources(qualified, name))
            if direct:
                parts.append('<div class="reads"><span class="label">reads</span> '
                             + ", ".join(_ref_link(r, known) for r in direct) + "</div>")
            if sources and [r for r in sources] != direct:
                parts.append('<div class="origin"><span class="label">from raw and seeds</span> '
                             + ", ".join(_ref_link(r, known) for r in sources) + "</div>")
            if (qualified, name) in lineage.direct and not direct:
                parts.append('<div class="label">computed from no column</div>')
            users = lineage.downstream(qualified, name)
            if users:
                parts.append('<div class="users"><span class="label">read by</span> ' + ", ".join(
                    _ref_link(ColumnRef(m, c), known) for m, c in users) + "</div>")
            cells.append('<td class="lineage">' + "".join(parts) + "</td>")
        rows.append(f'<tr id="{_e(_anchor(name))}" data-column="{_e(name)}">' + "".join(cells) + "</tr>")
    return rows + ["</tbody></table>"]


def _documented(relation: Model | Seed, types: Mapping[str, str]) -> list[tuple[str, str, str, list[str]]]:
    documented: dict[str, ColumnSpec] = {c.name: c for c in relation.columns}
    declared = dict(relation.column_types) if isinstance(relation, Seed) else {}
    names = list(types) or list(documented)
    names += [n for n in documented if n not in names]
    out = []
    for name in names:
        spec = documented.get(name)
        type_ = types.get(name) or (spec.data_type if spec else None) or declared.get(name) or ""
        out.append((name, type_, spec.description if spec else "(not documented in the .yml)",
                    [_test_label(t) for t in spec.tests] if spec else []))
    return out


def _relation_page(project: Project, relation: Model | Seed, types: Mapping[str, str], lineage: ProjectLineage,
                   known: set[str]) -> str:
    q = relation.qualified_name
    body = [f"<h1><code>{_e(q)}</code></h1>", f'<p class="description">{_e(relation.description)}</p>',
            '<ul class="meta">']
    if isinstance(relation, Model):
        mat = relation.materialized
        if relation.incremental is not None:
            mat += f" by <code>{_e(relation.incremental.date_column)}</code>"
            if relation.incremental.strategy == "fold":
                mat += " (fold)"
            else:
                mat += f", look-back {relation.incremental.lookback_days} day(s)"
        body.append(f"<li>Materialization: {mat}</li>")
        if relation.unique_key:
            body.append("<li>Grain: " + ", ".join(f"<code>{_e(c)}</code>" for c in relation.unique_key) + "</li>")
        body.append("<li>Reads: " + (", ".join(_rel_link(d, known) for d in sorted(relation.depends_on)) or "—")
                    + "</li>")
    else:
        body.append(f"<li>Seed, version {_e(relation.version or 'not set')}: <code>{_e(relation.path.name)}</code>"
                    "</li>")
    users = project.downstream(q)
    body.append("<li>Read by: " + (", ".join(_rel_link(m.qualified_name, known) for m in users) or "—") + "</li>")
    body.append("</ul>")
    if q in lineage.errors:
        body.append(f'<p class="label">No column lineage: {_e(lineage.errors[q])}</p>')
    body.append("<h2>Columns</h2>")
    body += _columns_rows(q, _documented(relation, types), lineage, known, with_lineage=True)
    table_tests = [t for t in relation.tests if t.column is None]
    if table_tests:
        body.append("<h2>Model tests</h2><ul>")
        body += [f"<li><code>{_e(t.name)}</code>: {_e(_test_label(t))}</li>" for t in table_tests]
        body.append("</ul>")
    if isinstance(relation, Model):
        if relation.unit_tests:
            body.append("<h2>Unit tests</h2><ul>")
            body += [f"<li><code>{_e(u.name)}</code>: {_e(u.description)} (given: "
                     + ", ".join(_e(g.relation) for g in u.given) + ")</li>" for u in relation.unit_tests]
            body.append("</ul>")
        body.append(f"<h2>SQL</h2><p class=\"label\">{_e(relation.path.name)}</p>"
                    f'<pre><code class="sql">{_e(relation.sql.strip())}</code></pre>')
    return _page(q, "\n".join(body))


def _raw_page(project: Project, qualified: str, types: Mapping[str, str], lineage: ProjectLineage,
              known: set[str], raw_docs: Mapping[str, RawDoc]) -> str:
    name = qualified.split(".", 1)[1]
    description, described = raw_docs.get(name, ("A raw table the models read.", {}))
    columns: list[tuple[str, str, str, list[str]]] = [
        (c, t, described.get(c, ""), []) for c, t in (types or {c: "" for c in described}).items()]
    body = [f"<h1><code>{_e(qualified)}</code></h1>", f'<p class="description">{_e(description)}</p>',
            "<ul class=\"meta\"><li>Loaded from the Parquet snapshots, one partition per <code>snapshot_date</code>"
            "</li><li>Read by: " + (", ".join(_rel_link(m.qualified_name, known) for m in project.downstream(qualified))
                                   or "—") + "</li></ul>", "<h2>Columns</h2>"]
    body += _columns_rows(qualified, columns, lineage, known, with_lineage=True)
    fields: dict[str, set[tuple[str, str]]] = {}
    for (model, column), refs in lineage.direct.items():
        for ref in refs:
            if ref.relation == qualified and ref.path:
                fields.setdefault(f"{ref.column}.{ref.path}", set()).add((model, column))
    if fields:
        body.append("<h2>JSON fields read by the models</h2><table><thead><tr><th>field</th><th>read as</th></tr>"
                    "</thead><tbody>")
        for field in sorted(fields):
            body.append(f"<tr><td><code>{_e(field)}</code></td><td>" + ", ".join(
                _ref_link(ColumnRef(m, c), known) for m, c in sorted(fields[field])) + "</td></tr>")
        body.append("</tbody></table>")
    return _page(qualified, "\n".join(body))


def _index_page(project: Project, known: set[str], lineage: ProjectLineage) -> str:
    body = ["<h1>Models</h1>",
            "<p>Every raw table, seed and model of the project, with its columns, tests, SQL and column-level "
            "lineage. Search by any model or column name or words of a description.</p>",
            "<h2>Graph</h2>", '<div class="graph">', _graph_svg(project, known), "</div>"]
    groups = {
        "raw": sorted(project.sources),
        SEED_SCHEMA: sorted(s.qualified_name for s in project.seeds.values()),
        "staging": [m.qualified_name for m in project.topological_order() if m.schema == "staging"],
        "marts": [m.qualified_name for m in project.topological_order() if m.schema == "marts"],
    }
    for schema, names in groups.items():
        if not names:
            continue
        body.append(f"<h2>{_e(schema)}</h2><ul>")
        for q in names:
            rel = project.relation(q)
            desc = rel.description if rel is not None else ""
            body.append(f"<li>{_rel_link(q, known)} <span class=\"label\">{_e(desc[:160])}</span></li>")
        body.append("</ul>")
    if lineage.errors:
        body.append("<h2>Models without column lineage</h2><ul>" + "".join(
            f"<li><code>{_e(m)}</code>: {_e(e)}</li>" for m, e in sorted(lineage.errors.items())) + "</ul>")
    return _page("Models", "\n".join(body))


def _search_index(project: Project, types: Mapping[str, Mapping[str, str]],
                  raw_docs: Mapping[str, RawDoc]) -> list[dict]:
    entries = []
    relations: list[tuple[str, str, str, dict[str, str]]] = []
    for q in sorted(project.sources):
        described = raw_docs.get(q.split(".", 1)[1], ("", {}))[1]
        relations.append((q, "raw table", "", {c: described.get(c, "") for c in (types.get(q) or described)}))
    built: list[Model | Seed] = [*project.seeds.values(), *project.topological_order()]
    for rel in built:
        cols = {c.name: c.description for c in rel.columns}
        for c in types.get(rel.qualified_name, {}):
            cols.setdefault(c, "")
        relations.append((rel.qualified_name, "seed" if isinstance(rel, Seed) else rel.materialized,
                          rel.description, cols))
    for q, kind, description, cols in relations:
        entries.append({"kind": kind, "name": q, "description": " ".join(description.split())[:200],
                        "url": page_name(q)})
        for column, text in cols.items():
            entries.append({"kind": "column", "name": f"{q}.{column}", "description": " ".join(text.split())[:200],
                            "url": f"{page_name(q)}#{_anchor(column)}"})
    return entries


def write_site(project: Project, out_dir: Path | str, cache_dir: Path | str | None = None,
               raw_docs: Mapping[str, RawDoc] | None = None) -> SiteReport:
    """Write the documentation site of ``project`` into ``out_dir`` (files of an earlier site replaced).

    ``cache_dir``: the column lineage's cache. ``raw_docs``: ``{raw table: (description, {column:
    description})}`` (the command line gives the API's); a raw table without one gets a default line.
    Returns a :class:`SiteReport` (index: ``out_dir/index.html``). Raises OSError: ``out_dir`` not writable.
    """
    out = Path(out_dir)
    (out / "assets").mkdir(parents=True, exist_ok=True)
    types = _types(project)
    lineage = project_lineage(project, cache_dir)
    known = {*project.sources, *(s.qualified_name for s in project.seeds.values()), *(m.qualified_name for m in project.models.values())}
    pages = {"index.html": _index_page(project, known, lineage)}
    for q in sorted(project.sources):
        pages[page_name(q)] = _raw_page(project, q, types.get(q, {}), lineage, known, raw_docs or {})
    built: list[Model | Seed] = [*project.seeds.values(), *project.topological_order()]
    for rel in built:
        pages[page_name(rel.qualified_name)] = _relation_page(project, rel, types.get(rel.qualified_name, {}),
                                                              lineage, known)
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    (out / "assets" / "site.css").write_text(_CSS.lstrip(), encoding="utf-8")
    (out / "assets" / "site.js").write_text(_JS.lstrip(), encoding="utf-8")
    index = json.dumps(_search_index(project, types, raw_docs or {}), indent=0, sort_keys=True, ensure_ascii=False)
    (out / "assets" / "search-index.js").write_text(f"window.SEARCH_INDEX = {index};\n", encoding="utf-8")
    return SiteReport(out, len(pages), dict(lineage.errors))
