"""Alert digests sent through Apprise, each alert once per destination, no Dagster: :func:`send_digest`,
:class:`AlertLedger` (``<data folder>/alerts.sqlite``), :func:`redact`; a failure is only a warning
(docs/concepts/operations.md, "Alerts").
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

__all__ = [
    "ALERT_KINDS",
    "TOP_ITEMS",
    "Alert",
    "AlertLedger",
    "SendReport",
    "compose",
    "ranking_alerts",
    "redact",
    "send_digest",
]

TOP_ITEMS = 5
"""Items listed per alert kind in a digest (the rest are counted)."""

ALERT_KINDS: dict[str, str] = {
    "run_failed": "Failed runs",
    "check_failed": "Failed blocking asset checks",
    "check_warned": "Failed WARN asset checks (nothing blocked)",
    "new_fields": "New fields in the vendor's records (not read yet)",
    "freshness_failed": "Assets failing their freshness policy",
    "entered_top_3": "Keywords entering the top 3",
    "exited_top_3": "Keywords leaving the top 3",
    "entered_top_10": "Keywords entering the top 10",
    "exited_top_10": "Keywords leaving the top 10",
    "visibility_drop": "Domains whose visibility fell",
    "estimated_clicks_drop": "Domains whose estimated clicks fell",
    "quota_runs_out": "Quotas projected to run out before their reset",
}
"""Every alert kind, in digest order, with its heading."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Alert:
    """One fact to tell: ``alert_id`` (stable and unique, the ledger's key: never sent twice to one destination),
    ``kind`` (a key of :data:`ALERT_KINDS`), ``line`` (one line of text), ``order`` (smallest first in its kind).
    """

    alert_id: str
    kind: str
    line: str
    order: tuple = ()


@dataclass
class SendReport:
    """What :func:`send_digest` did: per destination position (1-based), the alert ids it delivered;
    the positions that failed; the alerts already sent before (skipped)."""

    sent: dict[int, list[str]] = field(default_factory=dict)
    failed: list[int] = field(default_factory=list)
    skipped: int = 0


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret of 4 characters or more replaced by ``***``."""
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def compose(alerts: Sequence[Alert], header: Sequence[str] = (), top: int = TOP_ITEMS) -> str:
    """The digest body: ``header`` lines, then per kind (in :data:`ALERT_KINDS` order) a heading with
    the count and the first ``top`` items by :attr:`Alert.order`, and ``... and N more``."""
    lines = list(header)
    by_kind: dict[str, list[Alert]] = {}
    for alert in alerts:
        by_kind.setdefault(alert.kind, []).append(alert)
    for kind in [*ALERT_KINDS, *sorted(set(by_kind) - set(ALERT_KINDS))]:
        items = sorted(by_kind.get(kind, []), key=lambda a: (a.order, a.alert_id))
        if not items:
            continue
        lines += ["", f"{ALERT_KINDS.get(kind, kind)}: {len(items)}"]
        lines += [f"- {a.line}" for a in items[:top]]
        if len(items) > top:
            lines.append(f"... and {len(items) - top} more")
    return "\n".join(lines).strip() + "\n"


class AlertLedger:
    """Which alert went to which destination: table ``sent_alerts`` (``alert_id``, ``destination``: the URL's
    1-based position, ``scope``, ``status``: ``sending``/``sent``, ``sent_at`` UTC) in the SQLite file ``path``.
    Raises sqlite3.Error or OSError: the file cannot be written.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute("create table if not exists sent_alerts (alert_id text not null, destination integer "
                        "not null, scope text not null, status text not null, sent_at text not null, "
                        "primary key (alert_id, destination))")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            yield con
        finally:
            con.close()

    def claim(self, destination: int, scope: str, alert_ids: Sequence[str]) -> list[str]:
        """Record as ``sending`` the ids of ``alert_ids`` not yet recorded for ``destination``, in one
        immediate transaction; return them (the caller now owns sending them)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._connect() as con:
            con.execute("begin immediate")
            try:
                wanted = list(dict.fromkeys(alert_ids))
                known: set[str] = set()
                for i in range(0, len(wanted), 500):  # only these ids: the ledger grows every day
                    chunk = wanted[i:i + 500]
                    known |= {row[0] for row in con.execute(
                        f"select alert_id from sent_alerts where destination = ? and alert_id in "
                        f"({', '.join('?' * len(chunk))})", (destination, *chunk))}
                new = [a for a in wanted if a not in known]
                con.executemany("insert into sent_alerts values (?, ?, ?, 'sending', ?)",
                                [(a, destination, scope, now) for a in new])
                con.execute("commit")
            except BaseException:
                con.execute("rollback")
                raise
        return new

    def settle(self, destination: int, alert_ids: Sequence[str], delivered: bool) -> None:
        """Mark claimed ids ``sent`` (delivered) or release them (not delivered)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._connect() as con:
            if delivered:
                con.executemany("update sent_alerts set status = 'sent', sent_at = ? where alert_id = ? and "
                                "destination = ?", [(now, a, destination) for a in alert_ids])
            else:
                con.executemany("delete from sent_alerts where alert_id = ? and destination = ?",
                                [(a, destination) for a in alert_ids])

    def rows(self) -> list[tuple[str, int, str, str]]:
        """Every row as ``(alert_id, destination, scope, status)``, sorted."""
        with self._connect() as con:
            return sorted(con.execute("select alert_id, destination, scope, status from sent_alerts"))


@contextlib.contextmanager
def _quiet_apprise() -> Iterator[None]:
    """Apprise logs the destinations it contacts: keep its lines (which may name a host or user) out."""
    logger = logging.getLogger("apprise")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else "?"


def send_digest(
    urls: Sequence[str],
    ledger_path: Path,
    scope: str,
    title: str,
    alerts: Sequence[Alert],
    header: Sequence[str] = (),
    secrets: Iterable[str] = (),
    warn: Callable[[str], object] | None = None,
) -> SendReport:
    """Send the alerts not yet sent to each destination of ``urls`` (``RANK_PIPELINE_ALERT_URLS``) as one digest
    each; returns a :class:`SendReport`. Never raises for a destination or ledger failure: each is a warning.

    ``ledger_path``: the :class:`AlertLedger`; ``scope``: the run id or ``freshness``; ``title`` and ``header``
    open the message; a destination with nothing new gets none; ``secrets`` (and the URLs) are removed.
    """
    warn = warn or _log.warning
    report = SendReport()
    if not urls or not alerts:
        return report
    hidden = [*secrets, *urls]
    try:
        ledger = AlertLedger(ledger_path)
    except (OSError, sqlite3.Error) as exc:
        warn(f"alerts: the ledger {ledger_path} cannot be opened ({type(exc).__name__}: "
             f"{redact(str(exc), hidden)}); no alert was sent")
        return report
    ids = [a.alert_id for a in alerts]
    for position, url in enumerate(urls, start=1):
        where = f"destination {position} ({_scheme(url)}://)"
        try:
            claimed = ledger.claim(position, scope, ids)
        except sqlite3.Error as exc:
            warn(f"alerts: {where}: the ledger {ledger_path} cannot be written ({redact(str(exc), hidden)}); "
                 "nothing sent there")
            report.failed.append(position)
            continue
        report.skipped += len(ids) - len(claimed)
        if not claimed:
            continue
        chosen = set(claimed)
        body = redact(compose([a for a in alerts if a.alert_id in chosen], header), hidden)
        delivered = False
        try:
            import apprise

            with _quiet_apprise():
                sender = apprise.Apprise()
                if not sender.add(url):
                    warn(f"alerts: {where} is not a notification URL Apprise understands; check entry "
                         f"{position} of RANK_PIPELINE_ALERT_URLS")
                else:
                    delivered = bool(sender.notify(title=redact(title, hidden), body=body,
                                                   body_format=apprise.NotifyFormat.TEXT))
                    if not delivered:
                        warn(f"alerts: {where} did not accept the digest ({len(claimed)} alert(s) of {scope}); "
                             "the run goes on and a later digest may retry them")
        except Exception as exc:  # noqa: BLE001 - a destination never fails the pipeline
            warn(f"alerts: {where} failed: {type(exc).__name__}: {redact(str(exc), hidden)}")
        try:
            ledger.settle(position, claimed, delivered)
        except sqlite3.Error as exc:
            warn(f"alerts: {where}: the ledger {ledger_path} cannot be written ({redact(str(exc), hidden)})")
        if delivered:
            report.sent[position] = claimed
        else:
            report.failed.append(position)
    return report


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "not ranking"
    return f"{value:,.{digits}f}" if value != int(value) else f"{int(value):,}"


def ranking_alerts(published_db: Path, first: date, last: date) -> list[Alert]:
    """The ranking alerts of days ``first .. last`` from ``marts.fct_ranking_alerts`` in the published file
    (read-only): keywords by search volume, domains by largest fall, quotas by earliest exhaustion.

    Returns the alerts, empty when the file or mart is missing. Raises duckdb.Error: the file cannot be read.
    """
    import duckdb

    from rank_pipeline.transform.sql import one_row

    if not Path(published_db).exists():
        return []
    with duckdb.connect(str(published_db), read_only=True) as con:
        (present,) = one_row(con, "select count(*) from information_schema.tables where table_schema = 'marts' "
                                  "and table_name = 'fct_ranking_alerts'")
        if not present:
            return []
        cur = con.execute(
            "select alert_id, alert_type, snapshot_date, account, subject, domain, segment, previous_value, "
            "value, change_pct, search_volume, quota_limit, projected_exhaustion_date, cycle_end "
            "from marts.fct_ranking_alerts where snapshot_date between ? and ? order by alert_id",
            [first, last])
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    alerts = []
    days = "" if first == last else " on {snapshot_date}"
    for r in rows:
        kind = r["alert_type"]
        if r["alert_type"].endswith(("top_3", "top_10")):
            volume = r["search_volume"]
            line = (f"\"{r['subject']}\" ({r['domain']}, {r['segment']}): {_fmt(r['previous_value'], 0)} -> "
                    f"{_fmt(r['value'], 0)}, volume {_fmt(volume, 0) if volume is not None else '-'}")
            order = (-(volume or 0), r["subject"] or "")
        elif r["alert_type"] in ("visibility_drop", "estimated_clicks_drop"):
            line = (f"{r['subject']} ({r['account']}): {_fmt(r['previous_value'], 2)} -> {_fmt(r['value'], 2)} "
                    f"({r['change_pct']:+.1f} %)")
            order = (r["change_pct"], r["subject"] or "")
        else:
            line = (f"{r['subject']} of {r['account']}: projected {_fmt(r['value'], 0)} of "
                    f"{_fmt(r['quota_limit'], 0)} by {r['cycle_end']}, runs out on "
                    f"{r['projected_exhaustion_date'] or '-'}")
            order = (str(r["projected_exhaustion_date"]), r["subject"] or "")
        alerts.append(Alert(r["alert_id"], kind, line + days.format(**r), order))
    return alerts
