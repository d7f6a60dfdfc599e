"""Where a run extracts from (:class:`Source`): the vendor API when ``RANK_TRACKER_BASE_URL`` is set, else the
embedded sandbox; checked before a run, no Dagster here.

Keys are read only by :func:`read_keys` and refused when malformed (named by variable, never value); a data
folder keeps one source (:func:`check_data_folder`); an account is recognised by its domains
(:func:`check_account_identity`). Why: docs/concepts/completeness.md, "The source".
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from rank_pipeline.api import ClientConfig, RankTrackerClient, check_base_url
from rank_pipeline.extract.concurrency import run_all
from rank_pipeline.extract.day import AccountSource
from rank_pipeline.settings import (
    AccountConfig,
    ConfigurationError,
    DataPaths,
    RateSettings,
    Settings,
    Shard,
    api_key,
    key_variable,
    snapshots_uri_from_env,
)

__all__ = [
    "SANDBOX",
    "OpenedSource",
    "Source",
    "check_account_identity",
    "check_data_folder",
    "known_account_domains",
    "read_keys",
    "source_label",
]

SANDBOX = "sandbox"
"""The label recorded in ``source.json`` for the embedded sandbox."""


def _bad_key_character(key: str) -> str | None:
    for ch in key:
        code = ord(ch)
        if code < 32 or code == 127:
            return "a control character (for example a trailing newline from `echo` or a key file)"
        if ch.isspace():
            return "whitespace"
        if code > 126:
            return "a non-ASCII character"
    return None


def read_keys(accounts: Sequence[AccountConfig], env: Mapping[str, str] | None = None) -> list[AccountSource]:
    """Read and check each account's key (through :func:`rank_pipeline.settings.api_key`); returns one
    :class:`~rank_pipeline.extract.day.AccountSource` per account, in order.

    Raises ConfigurationError: a variable unset or empty; a key with a control character, whitespace or a
    non-ASCII character; two accounts with one key. The message names variables, never a key.
    """
    sources: list[AccountSource] = []
    by_key: dict[str, str] = {}
    for account in accounts:
        value = api_key(account, env)
        if not value.strip(", "):
            raise ConfigurationError(
                f"{account.api_key_env} is not set: export the API key of account {account.name!r} in it"
            )
        # a key pool: several keys of one account, comma-separated (spec "Authentication" 5)
        items = value.split(",")
        for position, key in enumerate(items, start=1):
            problem = _bad_key_character(key) if key else "nothing (an empty item)"
            if problem is not None:
                where = f"key {position} of {len(items)} in " if len(items) > 1 else ""
                raise ConfigurationError(
                    f"{where}{account.api_key_env} contains {problem}, which an API key cannot hold: set it "
                    "to the key alone (several keys comma-separated, no spaces), e.g. "
                    "export VAR=\"$(tr -d '[:space:]' < keyfile)\""
                )
            if key in by_key:
                raise ConfigurationError(
                    f"{by_key[key]} and {account.api_key_env} hold the same key: one account configured "
                    "under two names, or one key listed twice, would duplicate its rows; list each key once"
                )
            by_key[key] = account.api_key_env
        sources.append(AccountSource(account.name, ",".join(items)))
    return sources


def check_data_folder(data_dir: Path, label: str, *, record: bool = True) -> None:
    """Refuse a source (``label``: :data:`SANDBOX` or the API's base address) other than the one ``data_dir``
    records; write ``source.json`` when none is and ``record``.

    Raises ConfigurationError: the folder records another source, or its record is unreadable.
    """
    path = DataPaths(data_dir).source_record
    if path.exists():
        try:
            recorded = json.loads(path.read_text())["source"]
        except (OSError, ValueError, KeyError, TypeError):
            raise ConfigurationError(
                f"{path} is unreadable: restore it, or delete it if this folder's snapshots all come "
                f"from {_describe(label)}"
            ) from None
        if recorded != label:
            if recorded == SANDBOX:
                hint = ("unset RANK_TRACKER_BASE_URL to continue the sandbox's data, or set "
                        "RANK_PIPELINE_DATA_DIR to a new folder for the API's")
            elif label == SANDBOX:
                hint = (f"export RANK_TRACKER_BASE_URL={recorded} to continue this folder, or set "
                        "RANK_PIPELINE_DATA_DIR to another folder for the sandbox")
            else:
                hint = (f"set RANK_TRACKER_BASE_URL={recorded} to continue this folder, or set "
                        "RANK_PIPELINE_DATA_DIR to a new folder for the other API")
            raise ConfigurationError(
                f"the data folder {data_dir} holds snapshots from {_describe(recorded)}, not from "
                f"{_describe(label)}: {hint}"
            )
        return
    if record:
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # shard runs of one folder may record at once
        tmp.write_text(json.dumps({"source": label, "recorded_at": datetime.now(UTC).isoformat()}) + "\n")
        tmp.replace(path)


def source_label(base_url: str) -> str:
    """The API's base address as recorded in ``source.json``.

    On a loopback host (a sandbox served by hand or by a test, whose port changes at each start) the
    port is recorded as ``*``: ``http://127.0.0.1:*``. A vendor is never on loopback (keys travel over
    plain HTTP only to loopback, see :func:`rank_pipeline.api.check_base_url`).
    """
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback and parts.port is not None:
        return urlunsplit((parts.scheme, f"{parts.netloc.rsplit(':', 1)[0]}:*", parts.path, "", ""))
    return base_url


def _check_resolves(base_url: str) -> None:
    """Refuse a base URL whose host name does not resolve (one line, before any request)."""
    parts = urlsplit(base_url)
    try:
        socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                           type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigurationError(
            f"RANK_TRACKER_BASE_URL={base_url}: the host name {parts.hostname} does not resolve "
            f"({getattr(exc, 'strerror', None) or exc}); check the address (unset it for the embedded sandbox)"
        ) from None


def _describe(label: str) -> str:
    return "the embedded sandbox" if label == SANDBOX else f"the API at {label}"


def known_account_domains(snapshots_uri: Path | str) -> dict[str, str]:
    """Domain id -> account name, from the latest committed ``domains`` snapshot of the folder ({} if none)."""
    from rank_pipeline.snapshots.reader import list_snapshot_dates, read_snapshot

    dates = list_snapshot_dates(snapshots_uri, "domains")
    if not dates:
        return {}
    table = read_snapshot(snapshots_uri, "domains", dates[-1]).select(["account", "id"])
    return {str(i): str(a) for a, i in zip(table.column("account").to_pylist(),
                                           table.column("id").to_pylist(), strict=True)}


def check_account_identity(observed: Mapping[str, set[str]], known: Mapping[str, str]) -> None:
    """Refuse two names for one account, and an account renamed since the folder's latest snapshot.

    Args:
        observed: configured account name -> domain ids it holds now (page 1 of ``GET /v1/domains``).
        known: domain id -> account name in the folder (:func:`known_account_domains`).

    Raises:
        ConfigurationError: with the names involved and what to set.
    """
    owner: dict[str, str] = {}
    for name, ids in observed.items():
        for domain_id in sorted(ids):
            if domain_id in owner and owner[domain_id] != name:
                raise ConfigurationError(
                    f"accounts {owner[domain_id]!r} and {name!r} are the same account (both hold domain "
                    f"{domain_id}): configure it once in RANK_TRACKER_ACCOUNTS"
                )
            owner[domain_id] = name
    for name, ids in observed.items():
        before = sorted({known[d] for d in ids if d in known and known[d] != name})
        if before:
            was = before[0]
            how = ("unset RANK_TRACKER_ACCOUNTS, key in RANK_TRACKER_API_KEY" if was == "default"
                   else f"list {was} in RANK_TRACKER_ACCOUNTS, key in {key_variable(was)}")
            raise ConfigurationError(
                f"account {name!r} holds domains this data folder records under account {was!r}: an account "
                f"keeps its name here (renaming would duplicate its rows). Configure it as {was!r} again "
                f"({how}), or use a new RANK_PIPELINE_DATA_DIR"
            )


async def _domains_page(base_url: str, accounts: Sequence[AccountSource],
                        config: ClientConfig) -> dict[str, set[str]]:
    async def one(account: AccountSource) -> tuple[str, set[str]]:
        async with RankTrackerClient(base_url, account.api_key, config=config) as client:
            data = await client.get("/v1/domains", {"page": 1, "per_page": 1000})
        return account.name, {str(r["id"]) for r in data or [] if isinstance(r, dict) and "id" in r}

    return dict(await run_all(one(a) for a in accounts))


@dataclass(frozen=True)
class OpenedSource:
    """What an extraction needs: the base address, the accounts with their keys, and the source's label."""

    base_url: str
    accounts: list[AccountSource]
    label: str

    def __repr__(self) -> str:  # keys stay out of reprs (AccountSource hides them too)
        return f"OpenedSource(base_url={self.base_url!r}, accounts={[a.name for a in self.accounts]})"


@dataclass(frozen=True)
class Source:
    """A run's source: ``base_url`` None is the embedded sandbox; ``accounts`` name the key variables
    (the settings' :class:`~rank_pipeline.settings.AccountConfig`, as they are); ``shard`` restricts the
    extraction to the accounts of one shard (:mod:`rank_pipeline.settings.sharding`; None: all).

    Build with :meth:`from_settings`; check before a run with :meth:`validate`; open per day with :meth:`open`.
    """

    base_url: str | None
    accounts: tuple[AccountConfig, ...]
    client_config: ClientConfig = ClientConfig()  # noqa: RUF009 - frozen dataclass, safe as default
    shard: Shard | None = None

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **client_overrides) -> Source:
        """The source the environment describes, with its pacing from the rate settings."""
        settings = settings or Settings.from_env()
        config = ClientConfig.from_rates(settings.rates, **client_overrides)
        return cls(settings.base_url, settings.accounts, config, settings.shard)

    def for_shard(self, shard: Shard, rates: RateSettings) -> Source:
        """This source restricted to ``shard``'s accounts and paced to ``rates`` (its per-key and per-IP
        ceilings, window and concurrency; e.g. :meth:`rank_pipeline.settings.ShardPlan.rates`)."""
        config = replace(self.client_config, per_key_limit=rates.per_key_limit, per_ip_limit=rates.per_ip_limit,
                         window_s=rates.window_s, max_in_flight=rates.max_in_flight)
        return replace(self, shard=shard, client_config=config)

    @property
    def uses_sandbox(self) -> bool:
        """True for the embedded sandbox (no base URL)."""
        return self.base_url is None

    @property
    def label(self) -> str:
        """What ``source.json`` records: :data:`SANDBOX`, or the API's base address (:func:`source_label`)."""
        return SANDBOX if self.base_url is None else source_label(self.base_url)

    @property
    def checkpoint_id(self) -> str:
        """What an extraction's resume checkpoints are valid for (:mod:`rank_pipeline.extract.resume`):
        :data:`SANDBOX` for the embedded sandbox, whose port changes with every process, so a retry in
        a new process reuses them; the base address for the API. Never a key."""
        return SANDBOX if self.base_url is None else self.base_url

    def describe(self) -> str:
        """A log-safe description (no key), with the shard when there is one."""
        if self.base_url is None:
            text = "the embedded sandbox (RANK_TRACKER_BASE_URL is not set)"
        else:
            text = f"{self.base_url} (accounts: {', '.join(a.name for a in self.accounts)})"
        return text + (f", shard {self.shard}" if self.shard is not None else "")

    def validate(self, data_dir: Path | None = None, env: Mapping[str, str] | None = None, *,
                 resolve: bool = True) -> None:
        """Refuse a source that cannot work, before anything is written or requested: the checks of
        :meth:`open` that need no request to the API.

        For the vendor API: the base URL (``https://``, or plain ``http://`` to a loopback host only:
        :func:`rank_pipeline.api.check_base_url`), its host name resolving (DNS), every account's key
        (:func:`read_keys`). For both: the data folder's recorded source (:func:`check_data_folder`,
        nothing recorded here). ``resolve`` False skips the host name lookup.

        Raises:
            ConfigurationError: one line naming the variable to fix (never a key's value).
        """
        if self.base_url is not None:
            try:
                check_base_url(self.base_url)
            except ValueError as exc:
                raise ConfigurationError(f"RANK_TRACKER_BASE_URL: {exc}") from None
            if resolve:
                _check_resolves(self.base_url)
            read_keys(self.accounts, env)
        if data_dir is not None:
            check_data_folder(data_dir, self.label, record=False)

    def open(self, snapshot_date: date, data_dir: Path | None = None,
             env: Mapping[str, str] | None = None, snapshots_uri: Path | str | None = None) -> OpenedSource:
        """Check the data folder and the accounts, then return what to extract ``snapshot_date`` from: the embedded
        sandbox (started, its clock set), or the vendor API after :meth:`validate` and the accounts' identity check.

        ``data_dir`` None skips the folder checks; ``env``: where keys are read (default ``os.environ``);
        ``snapshots_uri``: default ``RANK_PIPELINE_SNAPSHOTS_URI``, else ``<data_dir>/snapshots``.

        Raises:
            ConfigurationError: a refused base URL or host, a malformed key, another source recorded in the
                folder, a renamed or repeated account.
            rank_pipeline.api.RankTrackerError: the API refused a key or could not be reached.
        """
        if self.base_url is None:
            if data_dir is not None:
                check_data_folder(data_dir, SANDBOX)
            from rank_pipeline.extract.embedded_sandbox import EmbeddedSandbox

            sandbox = EmbeddedSandbox.get().at(snapshot_date)
            return OpenedSource(sandbox.base_url, sandbox.accounts(), SANDBOX)
        self.validate(data_dir, env, resolve=data_dir is not None)
        accounts = read_keys(self.accounts, env)
        if data_dir is not None:
            observed = asyncio.run(_domains_page(self.base_url, accounts, self.client_config))
            if snapshots_uri is None:
                snapshots_uri = DataPaths(data_dir, snapshots_uri_from_env(env)).snapshot_store_uri
            check_account_identity(observed, known_account_domains(snapshots_uri))
            check_data_folder(data_dir, self.label)
        return OpenedSource(self.base_url, accounts, self.label)
