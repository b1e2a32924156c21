import asyncio
import datetime

import pytest

from kopf._cogs.aiokits import clock
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError, Vault, VaultContext

SECRETS = dict(password="p4ssw0rd", token="t0k3n", certificate_data=b"CERTDATA", private_key_data=b"KEYDATA")


def test_connection_info_signature_and_defaults() -> None:
    info = ConnectionInfo("https://k8s")
    assert info.server == "https://k8s"
    assert info.priority == 0
    assert info.expiration is None
    assert info.connector_factory is None
    with pytest.raises(TypeError):
        ConnectionInfo("https://k8s", connector_factory=lambda: None)  # type: ignore[call-arg]


def test_secrets_are_hidden_in_repr_and_str() -> None:
    info = ConnectionInfo("https://k8s", username="admin", ca_data=b"CADATA", **SECRETS)  # type: ignore[arg-type]
    for text in (repr(info), str(info), repr(Vault({"a": info}))):
        for secret in ("p4ssw0rd", "t0k3n", "CERTDATA", "KEYDATA", "CADATA"):
            assert secret not in text
    assert "admin" in repr(info)
    assert "token=<hidden>" in repr(info)


def test_connector_factory_is_attached_to_a_copy_and_ignored_in_equality() -> None:
    info = ConnectionInfo("http://x", token="t")
    factory = object
    hooked = info.with_connector_factory(factory)  # type: ignore[arg-type]
    assert hooked.connector_factory is factory
    assert info.connector_factory is None
    assert hooked == info and hash(hooked) == hash(info)


def test_naive_expiration_is_utc() -> None:
    naive = ConnectionInfo("http://x", expiration=datetime.datetime(2099, 1, 1, 12, 0))
    aware = ConnectionInfo("http://x", expiration=datetime.datetime(2099, 1, 1, 12, 0, tzinfo=datetime.UTC))
    assert naive.expiration_utc == aware.expiration_utc


async def collect_first(vault: Vault) -> str:
    async for key, _, _ in vault:
        return key
    raise AssertionError("no credentials")


async def test_priorities_then_insertion_order() -> None:
    vault = Vault()
    await vault.populate(
        {
            "low": ConnectionInfo("http://a", priority=-1),
            "first": ConnectionInfo("http://b"),
            "second": ConnectionInfo("http://c"),
            "high": ConnectionInfo("http://d", priority=10),
        }
    )
    seen = [key async for key, _, _ in vault]
    assert seen == ["high", "first", "second", "low"]


async def test_the_best_credentials_are_the_first_that_the_iteration_yields() -> None:
    vault = Vault()
    assert vault.best() is None  # empty: the iteration waits for a login, the shortcut has nothing
    await vault.populate(
        {
            "low": ConnectionInfo("http://a", priority=-1),
            "first": ConnectionInfo("http://b"),
            "second": ConnectionInfo("http://c"),
            "high": ConnectionInfo("http://d", priority=10),
        }
    )
    best = vault.best()
    assert best is not None
    key, info, context = best
    yielded = [(k, i, c) async for k, i, c in vault]
    assert (key, info, context) == yielded[0]
    assert key == "high"


async def test_no_best_credentials_while_some_are_expired() -> None:
    now = clock.utcnow()
    vault = Vault(
        {
            "fresh": ConnectionInfo("http://a", priority=1, expiration=now + datetime.timedelta(seconds=10)),
            "stale": ConnectionInfo("http://b", expiration=now - datetime.timedelta(seconds=1)),
        }
    )
    assert vault.best() is None  # the iteration drops the expired ones (and may ask for a re-login) first
    assert await collect_first(vault) == "fresh"
    best = vault.best()
    assert best is not None and best[0] == "fresh"


async def test_invalidation_moves_to_the_next_credentials() -> None:
    vault = Vault({"a": ConnectionInfo("http://a", priority=1), "b": ConnectionInfo("http://b")})
    tried = []
    async for key, info, _ in vault:
        tried.append(key)
        if key == "a":
            await vault.invalidate(key, info)
            continue
        break
    assert tried == ["a", "b"]
    assert list(vault.keys()) == ["b"]


async def test_readiness_and_waiting_for_the_first_login() -> None:
    vault = Vault()
    assert not vault.ready and vault.emptiness.is_set()
    task = asyncio.create_task(collect_first(vault))
    await asyncio.sleep(0)
    assert not task.done()
    await vault.populate({"k": ConnectionInfo("http://a")})
    assert await task == "k"
    assert vault.ready and not vault.emptiness.is_set()


async def test_depletion_waits_for_relogin_and_ignores_known_invalid_credentials() -> None:
    old = ConnectionInfo("http://a", token="old")
    vault = Vault({"k": old})
    await vault.invalidate("k", old)
    assert vault.emptiness.is_set()
    task = asyncio.create_task(collect_first(vault))
    await asyncio.sleep(0)
    assert not task.done()
    await vault.populate({"k": old, "j": ConnectionInfo("http://a", token="new")})
    assert await task == "j"
    assert vault.get("k") is None


async def test_depletion_with_nothing_new_fails_the_waiters() -> None:
    old = ConnectionInfo("http://a", token="old")
    vault = Vault({"k": old})
    error = RuntimeError("401")
    await vault.invalidate("k", old, exc=error)
    task = asyncio.create_task(collect_first(vault))
    await asyncio.sleep(0)
    await vault.populate({"k": old, "x": None})
    with pytest.raises(LoginError) as e:
        await task
    assert e.value.__cause__ is error


async def test_invalidation_of_replaced_credentials_keeps_the_new_ones() -> None:
    old, new = ConnectionInfo("http://a", token="old"), ConnectionInfo("http://a", token="new")
    vault = Vault({"k": old})
    await vault.populate({"k": new})
    await vault.invalidate("k", old)  # a late 401 of a request made with the old token
    assert vault.get("k") == new


@pytest.mark.looptime
async def test_expired_credentials_are_dropped_and_request_a_relogin() -> None:
    now = clock.utcnow()
    vault = Vault()
    await vault.populate(
        {
            "short": ConnectionInfo("http://a", priority=1, expiration=now + datetime.timedelta(seconds=10)),
            "naive": ConnectionInfo("http://b", expiration=(now + datetime.timedelta(seconds=20)).replace(tzinfo=None)),
            "already": ConnectionInfo("http://c", priority=5, expiration=now - datetime.timedelta(seconds=1)),
        }
    )
    assert await collect_first(vault) == "short"
    await asyncio.sleep(15)
    assert await collect_first(vault) == "naive"
    await asyncio.sleep(10)
    assert vault.is_empty()
    await vault.expire()
    assert vault.emptiness.is_set()


async def test_contexts_are_closed_when_retired_and_unused() -> None:
    closed = []

    async def closer() -> None:
        closed.append(True)

    info = ConnectionInfo("http://a")
    vault = Vault({"k": info})
    async for _, _, context in vault:
        context.put("thing", 123, closer)
        context.acquire()
        await vault.invalidate("k", info)
        assert context.retired and not closed  # still in use by a request
        await context.release()
        assert closed and context.closed
        break


async def test_vault_close_closes_the_contexts_but_keeps_the_credentials() -> None:
    closed = []

    async def closer() -> None:
        closed.append(True)

    vault = Vault({"k": ConnectionInfo("http://a")})
    async for _, _, context in vault:
        context.put("thing", 123, closer)
        break
    await vault.close()
    assert closed == [True]
    async for _, _, context in vault:
        assert isinstance(context, VaultContext) and not context.closed
        break
