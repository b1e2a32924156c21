import pytest

import kopf
from kopf._core.actions.errors import DEFAULT_RETRY_DELAY


def test_errors_mode_values() -> None:
    assert [(mode.name, mode.value) for mode in kopf.ErrorsMode] == [
        ("IGNORED", 1),
        ("TEMPORARY", 2),
        ("PERMANENT", 3),
    ]


def test_default_retry_delay_is_one_minute() -> None:
    assert DEFAULT_RETRY_DELAY == 60


def test_permanent_error() -> None:
    error = kopf.PermanentError("boo")
    assert isinstance(error, Exception)
    assert str(error) == "boo"


def test_temporary_error_defaults() -> None:
    error = kopf.TemporaryError("boo")
    assert isinstance(error, Exception)
    assert not isinstance(error, kopf.PermanentError)
    assert str(error) == "boo"
    assert error.delay == 60


def test_temporary_error_without_message() -> None:
    error = kopf.TemporaryError(delay=10)
    assert error.delay == 10
    assert error.args == (None,)


@pytest.mark.parametrize("delay", [0, 1.5, None])
def test_temporary_error_delays(delay: float | None) -> None:
    assert kopf.TemporaryError("boo", delay=delay).delay == delay
    assert kopf.TemporaryError("boo", delay).delay == delay


def test_temporary_error_message_is_positional_as_documented() -> None:
    # The documented signature has a name-mangled message: `_TemporaryError__msg`.
    assert kopf.TemporaryError(_TemporaryError__msg="boo").args == ("boo",)


@pytest.mark.parametrize("cls", [kopf.HandlerTimeoutError, kopf.HandlerRetriesError])
def test_handler_limit_errors_are_permanent(cls: type[Exception]) -> None:
    error = cls("boo")
    assert isinstance(error, kopf.PermanentError)
    assert str(error) == "boo"


def test_admission_error_defaults() -> None:
    error = kopf.AdmissionError()
    assert isinstance(error, kopf.PermanentError)
    assert error.message == ""
    assert error.code == 500


def test_admission_error_with_message_and_code() -> None:
    error = kopf.AdmissionError("Meh!", code=400)
    assert str(error) == "Meh!"
    assert error.message == "Meh!"
    assert error.code == 400


def test_admission_error_is_raisable_and_catchable_as_permanent() -> None:
    with pytest.raises(kopf.PermanentError) as excinfo:
        raise kopf.AdmissionError("Numbers must be below 0..100.", code=499)
    assert isinstance(excinfo.value, kopf.AdmissionError)
    assert excinfo.value.code == 499
