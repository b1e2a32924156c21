"""Serving the reviews by the validating handlers: allowed, denied (messages, codes, causes), warnings."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.engines.admission_errors import AdmissionError
from kopf._core.intents.registries import OperatorRegistry

from .helpers import (
    make_review,
    serve,
)

#
# Serving the reviews: validation.
#


async def test_allowed_with_no_failures(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    calls: list[str] = []

    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        calls.append("check")

    response = await serve(registry, settings, make_review())
    assert response == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "uid-1", "allowed": True},
    }
    assert calls == ["check"]


async def test_denied_with_the_message_and_the_code(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(spec: Any, **_: Any) -> None:
        if spec.get("field") == "value":
            raise AdmissionError("Meh! Change the field.", code=499)

    response = await serve(registry, settings, make_review(spec={"field": "value"}))
    assert response["response"] == {
        "uid": "uid-1",
        "allowed": False,
        "status": {"code": 499, "message": "Meh! Change the field."},
    }
    response = await serve(registry, settings, make_review(spec={"field": "other"}))
    assert response["response"] == {"uid": "uid-1", "allowed": True}


async def test_admission_error_defaults_to_500(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    async def check(**_: Any) -> None:
        raise AdmissionError("No.")

    response = await serve(registry, settings, make_review())
    assert response["response"]["status"] == {"code": 500, "message": "No."}


async def test_denied_with_field_causes_as_the_apiservers_invalid_status(
    registry: OperatorRegistry, settings: OperatorSettings
) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise kopf.AdmissionError(
            "The example is invalid.",
            code=422,
            causes=[
                ("spec.field", 'Invalid value: "x": should be longer'),
                ("spec.items", "Required value", "FieldValueRequired"),
                {"field": "spec.mode", "message": 'Unsupported value: "fast"', "reason": "FieldValueNotSupported"},
            ],
        )

    response = await serve(registry, settings, make_review())
    assert response["response"]["status"] == {
        "code": 422,
        "message": "The example is invalid.",
        "reason": "Invalid",
        "details": {
            "name": "kex1",
            "group": "kopf.dev",
            "kind": "KopfExample",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "x": should be longer',
                    "field": "spec.field",
                },
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.items"},
                {"reason": "FieldValueNotSupported", "message": 'Unsupported value: "fast"', "field": "spec.mode"},
            ],
        },
    }


async def test_field_causes_without_a_message_are_listed_as_the_apiserver_words_them(
    registry: OperatorRegistry, settings: OperatorSettings
) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise kopf.AdmissionError(code=422, causes=[("spec.a", "Required value"), ("spec.b", "Forbidden: no")])

    status = (await serve(registry, settings, make_review()))["response"]["status"]
    assert (
        status["message"] == 'KopfExample.kopf.dev "kex1" is invalid: [spec.a: Required value, spec.b: Forbidden: no]'
    )
    assert [cause["reason"] for cause in status["details"]["causes"]] == ["FieldValueRequired", "FieldValueForbidden"]


async def test_a_reason_without_causes(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise kopf.AdmissionError("Not now.", code=409, reason="Conflict")

    status = (await serve(registry, settings, make_review()))["response"]["status"]
    assert status == {"code": 409, "message": "Not now.", "reason": "Conflict"}


@pytest.mark.parametrize(
    "cause",
    [("spec.a",), ("spec.a", ""), ("spec.a", "msg", "Reason", "extra"), {"field": 1, "message": "m"}, "spec.a: bad"],
)
def test_malformed_causes_are_refused_at_once(cause: Any) -> None:
    with pytest.raises(TypeError, match="admission cause"):
        kopf.AdmissionError("No.", code=422, causes=[cause])


@pytest.mark.parametrize(
    "error",
    [
        kopf.PermanentError("permanent"),
        kopf.TemporaryError("temporary"),
        ValueError("arbitrary"),
    ],
)
async def test_other_errors_deny_with_500(
    registry: OperatorRegistry, settings: OperatorSettings, error: Exception
) -> None:
    @kopf.on.mutate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise error

    response = await serve(registry, settings, make_review())
    assert response["response"] == {"uid": "uid-1", "allowed": False, "status": {"code": 500, "message": str(error)}}


async def test_warnings_are_returned(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def hello(warnings: list[str], **_: Any) -> None:
        warnings.append("Verified by the operator.")

    @kopf.on.validate("kopfexamples", registry=registry)
    async def numbers(spec: Any, warnings: list[str], **_: Any) -> None:
        for val in spec.get("numbers", []):
            if not isinstance(val, float):
                warnings.append(f"{val!r} is not a number but can be converted.")

    response = await serve(registry, settings, make_review(spec={"numbers": ["1", 2.0]}))
    assert response["response"] == {
        "uid": "uid-1",
        "allowed": True,
        "warnings": [
            "Verified by the operator.",
            "'1' is not a number but can be converted.",
        ],
    }


async def test_warnings_are_returned_with_denials(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(warnings: list[str], **_: Any) -> None:
        warnings.append("Careful.")
        raise AdmissionError("Denied.", code=400)

    response = await serve(registry, settings, make_review())
    assert response["response"] == {
        "uid": "uid-1",
        "allowed": False,
        "warnings": ["Careful."],
        "status": {"code": 400, "message": "Denied."},
    }


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        (
            [
                ValueError("arbitrary"),
                kopf.TemporaryError("temporary"),
                kopf.PermanentError("permanent"),
                AdmissionError("admission", code=400),
            ],
            (400, "admission"),
        ),
        (
            [ValueError("arbitrary"), kopf.TemporaryError("temporary"), kopf.PermanentError("permanent")],
            (500, "permanent"),
        ),
        ([ValueError("arbitrary"), kopf.TemporaryError("temporary")], (500, "temporary")),
        ([ValueError("arbitrary1"), ValueError("arbitrary2")], (500, "arbitrary1")),
        ([AdmissionError("first", code=401), AdmissionError("second", code=402)], (401, "first")),
    ],
)
async def test_one_error_is_reported_by_priority(
    registry: OperatorRegistry, settings: OperatorSettings, errors: list[Exception], expected: tuple[int, str]
) -> None:
    calls: list[int] = []
    for idx, error in enumerate(errors):

        def fn(idx: int = idx, error: Exception = error, **_: Any) -> None:
            calls.append(idx)
            raise error

        kopf.on.validate("kopfexamples", id=f"h{idx}", registry=registry)(fn)

    @kopf.on.validate("kopfexamples", registry=registry)
    def succeeding(**_: Any) -> None:
        calls.append(-1)

    response = await serve(registry, settings, make_review())
    assert calls == [*range(len(errors)), -1]  # all are executed despite the failures.
    code, message = expected
    assert response["response"] == {"uid": "uid-1", "allowed": False, "status": {"code": code, "message": message}}


async def test_ignored_failures_do_not_deny(
    registry: OperatorRegistry, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    @kopf.on.validate("kopfexamples", ignore_failures=True, registry=registry)
    def tolerant(**_: Any) -> None:
        raise AdmissionError("Ignored.", code=400)

    @kopf.on.validate("kopfexamples", ignore_failures=True, registry=registry)
    def tolerant2(**_: Any) -> None:
        raise RuntimeError("Also ignored.")

    caplog.set_level(logging.WARNING)
    response = await serve(registry, settings, make_review())
    assert response["response"] == {"uid": "uid-1", "allowed": True}
    assert "'tolerant' failed with an exception and will ignore it" in caplog.text
    assert "'tolerant2' failed with an exception and will ignore it" in caplog.text

    @kopf.on.validate("kopfexamples", registry=registry)
    def strict(**_: Any) -> None:
        raise AdmissionError("Strict.", code=403)

    response = await serve(registry, settings, make_review())
    assert response["response"]["status"] == {"code": 403, "message": "Strict."}
