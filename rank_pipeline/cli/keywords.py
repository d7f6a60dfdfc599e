"""``keywords plan FILE [--offline] [--detailed-exitcode]`` and ``keywords apply FILE [--yes]``: tracked
keywords as code (:mod:`rank_pipeline.keywords`), on the one exit-status table
(:data:`rank_pipeline.errors.EXIT_STATUSES`): 0 done (plan: also with changes pending, unless
``--detailed-exitcode``, which gives :data:`~rank_pipeline.errors.EXIT_CHANGES_PENDING` for them, as Terraform's
``-detailed-exitcode``); 2 an error in the file, the settings or the plan, nothing sent; 1 the API failed
(apply: part-way, what was created is summarised)."""

from __future__ import annotations

import argparse
import sys

from rank_pipeline.cli.args import today
from rank_pipeline.cli.errors import UsageError
from rank_pipeline.cli.output import SESSION, is_tty, load_settings
from rank_pipeline.errors import EXIT_CHANGES_PENDING, EXIT_OK, EXIT_USAGE, RankPipelineError, first_line


class _KeywordsRefused(RankPipelineError):
    """``keywords plan|apply`` refused (exit :data:`~rank_pipeline.errors.EXIT_USAGE`: the file, the settings or
    the plan has an error: schema, catalogue, domain, quota 402 forecast, missing --yes; nothing was sent);
    one message line each."""

    exit_status = EXIT_USAGE

    def __init__(self, lines: list[str]):
        super().__init__(lines[0])
        self.lines = lines


def _keywords_clients(settings):
    """``(source description, {account: RankTrackerClient})`` for the configured source (the embedded
    sandbox when RANK_TRACKER_BASE_URL is unset), paced like the extractor (one IP pacer shared)."""
    from rank_pipeline.api import RankTrackerClient, SlidingWindowLimiter
    from rank_pipeline.extract.source import Source

    source = Source.from_settings(settings)
    opened = source.open(today())
    config = source.client_config
    ip = SlidingWindowLimiter.for_ceiling(config.per_ip_limit, config.window_s, config.safety_margin)
    clients = {a.name: RankTrackerClient(opened.base_url, a.api_key, config=config, ip_limiter=ip, label=a.name)
               for a in opened.accounts}
    return source.describe(), clients


def _keywords_load(path: str):
    from rank_pipeline.keywords import KeywordsFileError, load_keywords_file

    try:
        return load_keywords_file(path)
    except KeywordsFileError as exc:
        raise _KeywordsRefused(exc.problems) from None


def _keywords_run(func) -> int:
    """Run a keywords command: refusals and bad settings exit 2 (bad input) with their lines on stderr."""
    from rank_pipeline.settings import ConfigurationError

    try:
        return func()
    except _KeywordsRefused as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        SESSION.write("\n".join(f"error: {line}" for line in exc.lines))
        return EXIT_USAGE
    except (ConfigurationError, UsageError) as exc:
        print(f"error: {first_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE


def cmd_keywords_plan(args: argparse.Namespace) -> int:
    """``rank-pipeline keywords plan FILE``: the plan against the API (or the latest snapshot with
    ``--offline``), printed (spec "Keywords": create, catalogues, quota). Returns 0 (with
    ``--detailed-exitcode``: 0 with no change pending, :data:`~rank_pipeline.errors.EXIT_CHANGES_PENDING` with
    changes pending), 2 for an error in the file, settings or plan (a 402 forecast included)."""
    def run() -> int:
        import asyncio

        from rank_pipeline.keywords import plan_offline, plan_online

        settings = load_settings()
        loaded = _keywords_load(args.file)
        if args.offline:
            names = [a.name for a in settings.accounts] if settings.base_url else None
            try:
                plan = plan_offline(loaded, settings.paths.snapshot_store_uri, names)
            except FileNotFoundError as exc:
                raise _KeywordsRefused([str(exc)]) from None
        else:
            described, clients = _keywords_clients(settings)

            async def go():
                try:
                    return await plan_online(loaded, clients, described)
                finally:
                    for client in clients.values():
                        await client.aclose()

            plan = asyncio.run(go())
        print(plan.render())
        SESSION.write(plan.render())
        if plan.refusals:
            raise _KeywordsRefused([f"the plan cannot be applied: {plan.refusals[0]}"]
                                   + ([f"({len(plan.refusals) - 1} more problem(s) listed above)"]
                                      if len(plan.refusals) > 1 else []))
        return EXIT_CHANGES_PENDING if plan.pending and args.detailed_exitcode else EXIT_OK

    return _keywords_run(run)


def cmd_keywords_apply(args: argparse.Namespace) -> int:
    """``rank-pipeline keywords apply FILE``: re-plan, then create what is missing in all-or-nothing calls,
    never retrying a create blind (spec "Keywords"). Returns 0 when applied or nothing to do, 2 when refused
    before sending (plan errors, quota, no ``--yes`` on a non-terminal stdin), 1 when it failed part-way."""
    def run() -> int:
        import asyncio

        from rank_pipeline.keywords import ApplyFailed, apply_plan, plan_online

        if not args.yes and not is_tty(sys.stdin):
            raise _KeywordsRefused(["stdin is not a terminal, so apply cannot ask before creating keywords: "
                                    "review `rank-pipeline keywords plan FILE`, then pass --yes"])
        settings = load_settings()
        loaded = _keywords_load(args.file)
        described, clients = _keywords_clients(settings)

        async def go():
            try:
                plan = await plan_online(loaded, clients, described)
                print(plan.render(), flush=True)
                SESSION.write(plan.render())
                if plan.refusals:
                    raise _KeywordsRefused([f"nothing was sent: {line}" for line in plan.refusals])
                if not plan.pending:
                    return plan, None
                if not args.yes:
                    answer = input(f"Create {plan.to_create} keyword(s)? Only 'yes' creates them: ")
                    if answer.strip().lower() != "yes":
                        raise _KeywordsRefused(["not confirmed: nothing was sent"])
                try:
                    result = await apply_plan(plan, clients, echo=lambda line: print(line, flush=True))
                except ApplyFailed as exc:
                    for line in exc.lines[1:]:
                        print(f"error: {line}", file=sys.stderr)
                    summary = exc.result.summary(plan)
                    print(summary)
                    SESSION.write(f"{summary}\nerror: {exc}")
                    raise
                return plan, result
            finally:
                for client in clients.values():
                    await client.aclose()

        plan, result = asyncio.run(go())
        summary = (result.summary(plan) if result is not None else
                   f"Applied: nothing to create; {plan.existing} already tracked; {plan.untracked} tracked but "
                   "not in the file (never removed).")
        SESSION.write(summary)
        where = f" (run log: {SESSION.log_path})" if SESSION.log_path is not None else ""
        print(summary + where)
        return 0

    return _keywords_run(run)
