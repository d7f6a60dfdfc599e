"""Accounts and their keys: the vendor's base address, each account's key variable, the one reader of a key's
value, and what the demo unsets."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

from rank_pipeline.settings.engine import ENGINE_ENV
from rank_pipeline.settings.values import ConfigurationError

__all__ = ["BASE_URL_ENV", "AccountConfig", "api_key", "key_variable", "normalise_base_url", "unset_for_demo"]

BASE_URL_ENV = "RANK_TRACKER_BASE_URL"
"""The vendor's base address; unset: the embedded sandbox."""


@dataclass(frozen=True)
class AccountConfig:
    """One account to extract: its name (used in snapshots and the warehouse) and its key's variable."""

    name: str
    api_key_env: str


def key_variable(account: str) -> str:
    """The variable holding the key of ``account`` listed in ``RANK_TRACKER_ACCOUNTS``:
    ``RANK_TRACKER_API_KEY_<NAME>`` (upper case, ``-`` read as ``_``). The single unlisted account
    ``default`` reads ``RANK_TRACKER_API_KEY``."""
    return f"RANK_TRACKER_API_KEY_{account.upper().replace('-', '_')}"


def normalise_base_url(raw: str | None) -> str | None:
    """``RANK_TRACKER_BASE_URL`` without surrounding spaces, trailing ``/`` or a trailing ``/v1``.

    The spec's paths start with ``/v1`` (``{base_url}/v1/domains``), so a base URL copied with ``/v1``
    would otherwise become ``/v1/v1/...`` and read as "Resource not found". None when unset or empty.

    Raises:
        ConfigurationError: not an ``http://`` or ``https://`` address.
    """
    base_url = (raw or "").strip().rstrip("/")
    if not base_url:
        return None
    if base_url.lower().endswith("/v1"):
        base_url = base_url[:-3].rstrip("/")
    if not re.match(r"^https?://[^/\s]", base_url):
        raise ConfigurationError(
            f"RANK_TRACKER_BASE_URL={base_url!r} is not an http(s) address; set it to the vendor's "
            "base address, e.g. https://api.example.com"
        )
    return base_url


def api_key(account: AccountConfig, env: Mapping[str, str] | None = None) -> str:
    """The value of ``account``'s key variable (:attr:`AccountConfig.api_key_env`), ``""`` when unset.

    The one place a key is read from the environment, when a run opens the source
    (:func:`rank_pipeline.extract.source.read_keys` checks it). The value is a secret: never log, store
    or repeat it in a message.
    """
    env = os.environ if env is None else env
    return env.get(account.api_key_env) or ""


def unset_for_demo(env: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove from ``env`` (default ``os.environ``, so the Dagster definitions see it) the settings the demo
    replaces: ``RANK_TRACKER_BASE_URL`` (the demo always extracts from the embedded sandbox) and a
    ``RANK_PIPELINE_ENGINE`` other than ``duckdb`` (it prints marts from the published DuckDB file).

    Returns:
        the names of the variables that were set and are now removed, in that order.
    """
    env = os.environ if env is None else env
    removed = []
    if env.pop(BASE_URL_ENV, None):
        removed.append(BASE_URL_ENV)
    if env.get(ENGINE_ENV, "").strip().lower() not in ("", "duckdb"):
        env.pop(ENGINE_ENV)
        removed.append(ENGINE_ENV)
    return removed
