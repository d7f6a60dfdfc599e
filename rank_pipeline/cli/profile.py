"""``rank-pipeline profile``: what the vendor really sends, path by path, beside what the contract reads."""

from __future__ import annotations

import argparse
import json
import sys

from rank_pipeline.cli.errors import UsageError
from rank_pipeline.cli.output import load_settings, print_table


def cmd_profile(args: argparse.Namespace) -> int:
    """Profile a day's committed snapshots (default the latest) or, with ``--live N``, N records per endpoint
    read from the configured source; print every JSON path with its types, shares, distinct count and an
    example value, and whether the contract (``sources/vendor_contract.yml``) reads it."""
    from rank_pipeline.settings import models_dir
    from rank_pipeline.shape import ContractError, load_contract, profile_day, profile_records

    settings = load_settings()
    try:
        contract = load_contract(models_dir())
    except ContractError as exc:
        raise UsageError(str(exc)) from None
    wanted = args.endpoint or None
    if args.suggest:
        return _suggest(args, settings, contract, wanted)
    if args.live is not None:
        from rank_pipeline.cli.args import today
        from rank_pipeline.extract.sample import sample_records
        from rank_pipeline.extract.source import Source

        samples = sample_records(Source.from_settings(settings), args.live, today=today())
        profiles = {e: profile_records(e, records) for e, records in samples.items() if not wanted or e in wanted}
        where = f"a live sample of up to {args.live} records per endpoint"
    else:
        try:
            day, profiles = profile_day(settings.paths.snapshot_store_uri, args.date,
                                        **({"endpoints": wanted} if wanted else {}))
        except LookupError as exc:
            raise UsageError(str(exc)) from None
        if not profiles:
            raise UsageError(f"no committed snapshot on {day} under {settings.paths.snapshot_store_uri}; "
                             "leave out --date for the latest day")
        where = f"the snapshots of {day}"
    if args.format == "json":
        out = []
        for endpoint, profile in profiles.items():
            entry = profile.to_json()
            for row in entry["paths"]:
                row["read_by_contract"] = contract.reads(endpoint, row["path"], set(row["types"]))
            out.append(entry)
        json.dump({"source": where, "contract": str(contract.path), "endpoints": out}, sys.stdout, indent=2,
                  default=str)
        print()
        return 0
    from rank_pipeline.steps.shape import display_path

    print(f"profile of {where}; contract: {display_path(contract.path)}")
    for endpoint, profile in profiles.items():
        print(f"\n== {endpoint} ({profile.records} records) ==")
        rows = [(s.path, s.type_label(), f"{100 * profile.share(s.present):.1f}%", f"{100 * profile.share(s.null):.1f}%",
                 "" if s.distinct is None else s.distinct, "" if s.example is None else json.dumps(s.example)[:40],
                 "yes" if contract.reads(endpoint, s.path, set(s.types)) else "NO")
                for s in profile.paths.values()]
        print_table(["path", "types", "present", "null", "distinct", "example", "read"], rows, sys.stdout)
        missing = [f.path for f in contract.fields.get(endpoint, ()) if f.observed not in profile.paths]
        if missing and profile.records:
            print(f"contracted but not seen: {', '.join(missing)}")
    return 0


def _suggest(args: argparse.Namespace, settings, contract, wanted: list[str] | None) -> int:
    """``profile --suggest``: the notes (``# ...``) and the patch of the contract, on stdout."""
    import pyarrow as pa

    from rank_pipeline.settings import models_dir
    from rank_pipeline.shape import load_thresholds
    from rank_pipeline.shape.profile import attributes_table
    from rank_pipeline.shape.suggest import suggest_remap
    from rank_pipeline.snapshots.reader import list_snapshot_dates
    from rank_pipeline.snapshots.storage import store_for
    from rank_pipeline.steps.shape import display_path

    endpoints = [e for e in contract.fields if not wanted or e in wanted]
    if args.live is not None:
        from rank_pipeline.cli.args import today
        from rank_pipeline.extract.sample import sample_records
        from rank_pipeline.extract.source import Source

        samples = sample_records(Source.from_settings(settings), args.live, today=today())
        tables = {e: pa.table({"attributes": pa.array(
            [json.dumps(r.get("attributes")) for r in samples.get(e, [])], pa.string())}) for e in endpoints}
        where = f"a live sample of up to {args.live} records per endpoint"
    else:
        store = store_for(settings.paths.snapshot_store_uri)
        days = {e: list_snapshot_dates(store, e) for e in endpoints}
        chosen = args.date or max((d[-1] for d in days.values() if d), default=None)
        if chosen is None:
            raise UsageError(f"no committed snapshot under {settings.paths.snapshot_store_uri}: run "
                             "`rank-pipeline run` (or `extract`) first, or suggest from the API with --live N")
        tables = {e: attributes_table(store, e, chosen) for e in endpoints if chosen in days[e]}
        where = f"the snapshots of {chosen}"
    suggestion = suggest_remap(contract, load_thresholds(models_dir()), tables)
    shown = display_path(contract.path)
    print(f"# a remap of {shown} suggested from {where}; review it, then `git apply` this file and "
          "`rank-pipeline rebuild`")
    for line in suggestion.notes():
        print(f"# {line}")
    if not suggestion.assignments:
        print("# nothing to remap: every contracted path is where the contract reads it")
        return 0
    sys.stdout.write(suggestion.patch(contract.path, shown))
    return 0
