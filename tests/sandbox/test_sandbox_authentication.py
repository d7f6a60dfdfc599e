"""Authentication (spec, "Authentication"): raw key in Authorization, 401/403 with empty bodies."""

from __future__ import annotations

import pytest

PATHS = ["/v1/domains", "/v1/tags", "/v1/account/usage", "/v1/nothing"]


@pytest.mark.parametrize("path", PATHS)
def test_authentication__missing_header_is_401_empty(client, path):
    r = client.get(path)
    assert r.status_code == 401 and r.content == b""


def test_authentication__bearer_prefix_is_a_wrong_key(client, acme):
    r = client.get("/v1/domains", headers={"Authorization": f"Bearer {acme.api_key}"})
    assert r.status_code == 401 and r.content == b""
    assert client.get("/v1/domains", key=acme.api_key).status_code == 200


@pytest.mark.parametrize("value", ["", "nope", "x" * 32])
def test_authentication__wrong_key_is_401_empty(client, value):
    r = client.get("/v1/domains", headers={"Authorization": value})
    assert r.status_code == 401 and r.content == b""


def test_authentication__wrong_case_or_truncated_key_is_401(client, acme):
    for value in (acme.api_key.upper(), acme.api_key[:-1], acme.api_key + "0"):
        assert client.get("/v1/domains", headers={"Authorization": value}).status_code == 401


def test_authentication__plan_without_api_access_is_403_empty(client, world):
    initech = world.account("initech")
    for path in PATHS:
        r = client.get(path, key=initech.api_key)
        assert r.status_code == 403 and r.content == b""


def test_authentication__each_key_sees_its_own_account(client, world):
    for name in ("acme", "globex"):
        account = world.account(name)
        r = client.get("/v1/domains", key=account.api_key)
        assert r.json()["data"] == world.domains(account.account_id)
        assert client.get("/v1/account/usage", key=account.api_key).json()["data"]["id"] == account.account_id


def test_authentication__control_endpoints_need_no_key(client):
    assert client.get("/_sandbox/today").status_code == 200
