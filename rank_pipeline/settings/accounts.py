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
    """``RANK_TRACKER_BASE_URL`` without surrounding spaces, trailing ``/`` or ``/v1`` (the spec's paths start with
    ``/v1``); None when unset or empty. Raises ConfigurationError: not an ``http(s)://`` address.
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
    """The value of ``account``'s key variable (:attr:`AccountConfig.api_key_env`), ``""`` when unset: the one read
    of a key, when a run opens the source. A secret: never log, store or repeat it.
    """
    env = os.environ if env is None else env
    return env.get(account.api_key_env) or ""


def unset_for_demo(env: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove from ``env`` (default ``os.environ``) what the demo replaces: ``RANK_TRACKER_BASE_URL`` and a
    ``RANK_PIPELINE_ENGINE`` other than ``duckdb``; returns the names removed, in that order.
    """
    env = os.environ if env is None else env
    removed = []
    if env.pop(BASE_URL_ENV, None):
        removed.append(BASE_URL_ENV)
    if env.get(ENGINE_ENV, "").strip().lower() not in ("", "duckdb"):
        env.pop(ENGINE_ENV)
        removed.append(ENGINE_ENV)
    return removed
