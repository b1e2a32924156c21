"""The keys of the handlers' progress: names within the limits of annotations & labels."""

import pytest

from kopf._cogs.configs.conventions import make_safe_name
from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
)


def test_annotation_defaults() -> None:
    storage = AnnotationsProgressStorage()
    assert storage.prefix == "kopf.zalando.org"
    assert storage.verbose is False
    assert storage.touch_key == "touch-dummy"
    assert storage.v1 is True


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("create_fn", "kopf.zalando.org/create_fn"),
        ("create_fn/item1", "kopf.zalando.org/create_fn.item1"),
        ("fn/spec.field", "kopf.zalando.org/fn.spec.field"),
    ],
)
def test_short_keys(key: str, expected: str) -> None:
    assert AnnotationsProgressStorage().make_keys(key) == [expected]
    assert AnnotationsProgressStorage(v1=False).make_keys(key) == [expected]


def test_keys_without_prefix() -> None:
    assert AnnotationsProgressStorage(prefix="").make_keys("fn/sub") == ["fn.sub"]


def test_keys_follow_the_prefix_and_v1_changed_later_and_are_fresh_lists() -> None:
    storage = AnnotationsProgressStorage()
    keys = storage.make_keys("fn")
    keys.append("mutated by the caller")
    assert storage.make_keys("fn") == ["kopf.zalando.org/fn"]
    storage.prefix = "example.com"
    assert storage.make_keys("fn") == ["example.com/fn"]
    storage.v1 = False
    long_key = "very-long-handler-name-" * 5
    assert len(storage.make_keys(long_key)) == 1


def test_long_keys_are_hashed_consistently_and_validly() -> None:
    key = "very-long-handler-name-" * 5
    v2, v1 = AnnotationsProgressStorage().make_keys(key)
    prefix, v2name = v2.split("/")
    assert prefix == "kopf.zalando.org"
    assert len(v2name) == 63
    assert len(v1) == 63  # the legacy format limits the whole key, prefix included.
    assert v1.startswith("kopf.zalando.org/very-long-handler-name-")
    assert v2name[:40] == key[:40]
    assert v2name[-7:] == v1[-7:]  # the same hash of the same id (it has no '/').
    assert AnnotationsProgressStorage().make_keys(key) == [v2, v1]
    assert AnnotationsProgressStorage(v1=False).make_keys(key) == [v2]
    other_v2 = AnnotationsProgressStorage().make_keys(key + "x")[0]
    assert other_v2 != v2


def test_medium_keys_differ_only_in_v1() -> None:
    key = "x" * 50  # fits into 63 chars of the name, but not with the prefix.
    v2, v1 = AnnotationsProgressStorage().make_keys(key)
    assert v2 == f"kopf.zalando.org/{key}"
    assert len(v1) == 63


@pytest.mark.parametrize("key", ["lambda:/path/to/file.py:12", "_private", "trailing_", "a b"])
def test_invalid_characters_are_sanitised_with_a_hash(key: str) -> None:
    name = make_safe_name(key)
    assert name[0].isalnum()
    assert name[-1].isalnum()
    assert all(c.isalnum() or c in "-_." for c in name)
    assert name != make_safe_name(key + "!")


def test_tiny_limits_leave_only_the_hash() -> None:
    assert len(make_safe_name("x" * 100, limit=5)) == 6


@pytest.mark.parametrize(
    ("key", "v2", "v1"),
    [  # as the published framework 1.45 writes them (measured)
        ("x" * 57, "x" * 57, "x" * 39 + "-PYZeGQ"),
        ("x" * 64, "x" * 56 + "-SItAqA", "x" * 39 + "-SItAqA"),
        ("a/" + "x" * 62, "a." + "x" * 54 + "-.7Lmyw", "a." + "x" * 37 + "-rXiUGg"),
        (
            "handler/with.long." + "y" * 70,
            "handler.with.long." + "y" * 38 + "-DrVPGg",
            "handler.with.long." + "y" * 21 + "-oFBxWw",
        ),
    ],
)
def test_long_keys_as_the_published_framework_writes_them(key: str, v2: str, v1: str) -> None:
    assert AnnotationsProgressStorage().make_keys(key) == [f"kopf.zalando.org/{v2}", f"kopf.zalando.org/{v1}"]
