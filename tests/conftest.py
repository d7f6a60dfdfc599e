"""Fixtures shared by the test folders."""

from __future__ import annotations

from contextlib import contextmanager

import pytest


@pytest.fixture(scope="session")
def served_source():
    """``served_source(base_url, {account: key}, **client_config)``: a context manager giving the
    ``source`` resource (:class:`rank_pipeline.extract.source.Source`) for a sandbox served at
    ``base_url``, each account's key in its own environment variable for the ``with`` block (keys reach
    a source only through the environment)."""
    from rank_pipeline.api import ClientConfig
    from rank_pipeline.extract.source import Source
    from rank_pipeline.settings import AccountConfig

    @contextmanager
    def source(base_url: str, keys: dict[str, str], **client):
        with pytest.MonkeyPatch.context() as env:
            for name, key in keys.items():
                env.setenv(f"TEST_RANK_KEY_{name.upper()}", key)
            yield Source(base_url, tuple(AccountConfig(n, f"TEST_RANK_KEY_{n.upper()}") for n in keys),
                         ClientConfig(**client))

    return source
