import concurrent.futures
import dataclasses
import inspect
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from kopf._cogs.configs.configuration import (
    AdmissionSettings,
    BackgroundSettings,
    BatchingSettings,
    ExecutionSettings,
    NetworkingSettings,
    OperatorSettings,
    PeeringSettings,
    PersistenceSettings,
    PostingSettings,
    ProcessSettings,
    ScanningSettings,
    WatchingSettings,
)
from kopf._cogs.configs.diffbase import AnnotationsDiffBaseStorage, StatusDiffBaseStorage
from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)

SECTIONS = {
    "process": ProcessSettings,
    "posting": PostingSettings,
    "peering": PeeringSettings,
    "watching": WatchingSettings,
    "batching": BatchingSettings,
    "scanning": ScanningSettings,
    "admission": AdmissionSettings,
    "execution": ExecutionSettings,
    "background": BackgroundSettings,
    "networking": NetworkingSettings,
    "persistence": PersistenceSettings,
}


def test_operator_settings_signature() -> None:
    params = inspect.signature(OperatorSettings).parameters
    # The constructor's argument keeps the older name `queueing` (as in the published framework).
    assert list(params) == [name.replace("batching", "queueing") for name in SECTIONS]
    assert all(param.kind is param.POSITIONAL_OR_KEYWORD for param in params.values())
    assert all(field.default_factory is not dataclasses.MISSING for field in dataclasses.fields(OperatorSettings))


def test_operator_settings_sections_are_created_per_instance() -> None:
    settings1 = OperatorSettings()
    settings2 = OperatorSettings()
    for name, cls in SECTIONS.items():
        assert isinstance(getattr(settings1, name), cls)
        assert getattr(settings1, name) is not getattr(settings2, name)
    assert settings1.persistence.progress_storage is not settings2.persistence.progress_storage
    assert settings1.execution.executor is not settings2.execution.executor


def test_sections_can_be_passed_explicitly() -> None:
    posting = PostingSettings(level=logging.ERROR)
    assert OperatorSettings(posting=posting).posting is posting


def test_queueing_is_an_alias_of_batching() -> None:
    settings = OperatorSettings()
    assert settings.queueing is settings.batching
    new = BatchingSettings(idle_timeout=1)
    settings.queueing = new
    assert settings.batching is new


@pytest.mark.parametrize(("section", "cls"), list(SECTIONS.items()))
def test_unknown_settings_are_refused_with_the_valid_ones_listed(section: str, cls: type) -> None:
    settings = OperatorSettings()
    with pytest.raises(AttributeError) as info:
        getattr(settings, section).no_such_setting = 1
    message = str(info.value)
    assert f"settings.{section} has no setting 'no_such_setting'" in message
    valid = {field.name for field in dataclasses.fields(cls)}
    assert all(name in message for name in valid)
    assert not hasattr(getattr(settings, section), "no_such_setting")


def test_unknown_sections_are_refused() -> None:
    with pytest.raises(AttributeError, match=r"settings has no setting 'executon'.*execution"):
        OperatorSettings().executon = ExecutionSettings()  # type: ignore[attr-defined]


def test_known_settings_and_properties_are_accepted() -> None:
    settings = OperatorSettings()
    settings.execution.default_backoff = 5
    settings.execution.max_workers = 3  # a property
    settings.peering.namespaced = True  # a property
    settings.batching = settings.queueing  # a property of the top level
    settings.posting.default_backoffs = 2
    assert settings.posting.default_backoffs == (2,)
    assert settings.execution.default_backoff == 5


def test_the_published_frameworks_settings_exist() -> None:
    # As listed from the published Kopf 1.45 (the differential harness checks the same with the installed peer).
    settings = OperatorSettings()
    assert settings.execution.default_backoff == 60
    assert settings.networking.enforce_retry_after is False
    assert settings.networking.trust_env is False
    assert settings.posting.loggers is True  # as documented (the published 1.45: False; see docs/kopf.md)
    assert settings.posting.default_backoffs == (1, 1, 2, 3, 5, 8, 13, 21)
    assert settings.posting.logging_backoffs == (1, 1, 2, 3, 5)
    assert settings.posting.worker_limit is None
    assert settings.posting.idle_timeout == 1.0
    assert (settings.posting.reporting_component, settings.posting.reporting_instance) == ("kopf", "dev")
    assert settings.posting.event_name_prefix == "kopf-event-"
    assert settings.watching.chunk_size is None
    assert settings.watching.initial_streaming is False
    assert dict(settings.watching.label_selectors) == {}
    assert dict(settings.watching.field_selectors) == {}
    assert dict(settings.watching.shard_selectors) == {}


def test_process_defaults() -> None:
    assert ProcessSettings().ultimate_exiting_timeout == 600


def test_posting_defaults() -> None:
    settings = PostingSettings()
    assert settings.enabled is True
    assert settings.level == logging.INFO


def test_peering_defaults() -> None:
    settings = PeeringSettings()
    assert settings.name == "default"
    assert settings.mandatory is False
    assert settings.standalone is False
    assert settings.stealth is False
    assert settings.priority == 0
    assert settings.lifetime == 60
    assert settings.clusterwide is False
    assert settings.namespaced is True


def test_peering_namespaced_is_the_inverse_of_clusterwide() -> None:
    settings = PeeringSettings()
    settings.namespaced = False
    assert settings.clusterwide is True
    settings.clusterwide = False
    assert settings.namespaced is True


def test_watching_defaults() -> None:
    settings = WatchingSettings()
    assert settings.server_timeout is None
    assert settings.client_timeout is None
    assert settings.connect_timeout is None
    assert settings.reconnect_backoff == 0.1
    assert settings.inactivity_timeout == 70


def test_batching_defaults() -> None:
    settings = BatchingSettings()
    assert settings.worker_limit is None
    assert settings.idle_timeout == 5.0
    assert settings.batch_window == 0.1
    assert settings.exit_timeout == 2.0
    delays = list(settings.error_delays)
    assert delays[0] == 1
    assert delays[-1] == 610
    assert all(a + b == c for a, b, c in zip(delays[1:], delays[2:], delays[3:], strict=False))


def test_scanning_defaults() -> None:
    assert ScanningSettings().disabled is False


def test_admission_defaults() -> None:
    settings = AdmissionSettings()
    assert settings.server is None
    assert settings.managed is None


def test_admission_accepts_servers() -> None:
    class Server:
        async def __call__(self, fn: Any) -> Iterator[Any]:
            return iter(())  # never served in this test: only its acceptance by the settings matters

    settings = AdmissionSettings()
    settings.server = Server()  # type: ignore[assignment]
    settings.managed = "auto.kopf.dev"
    assert settings.managed == "auto.kopf.dev"


def test_execution_defaults() -> None:
    settings = ExecutionSettings()
    assert isinstance(settings.executor, concurrent.futures.ThreadPoolExecutor)
    assert isinstance(settings.max_workers, int)
    assert settings.max_workers >= 1


def test_execution_max_workers_adjusts_the_executor() -> None:
    settings = ExecutionSettings()
    settings.max_workers = 20
    assert settings.max_workers == 20
    assert settings.executor._max_workers == 20  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        settings.max_workers = 0


def test_execution_executor_can_be_replaced() -> None:
    settings = ExecutionSettings()
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=3)
    settings.executor = executor
    assert settings.max_workers == 3
    executor.shutdown()


def test_execution_max_workers_on_unsupported_executors() -> None:
    class Custom(concurrent.futures.Executor):
        pass

    settings = ExecutionSettings(executor=Custom())
    assert settings.max_workers is None
    with pytest.raises(TypeError):
        settings.max_workers = 5


def test_background_defaults() -> None:
    settings = BackgroundSettings()
    assert settings.cancellation_polling == 60
    assert settings.instant_exit_timeout is None
    assert settings.instant_exit_zero_time_cycles == 10


def test_networking_defaults() -> None:
    settings = NetworkingSettings()
    assert settings.request_timeout == 300
    assert settings.connect_timeout is None
    backoffs = list(settings.error_backoffs)
    assert 45 <= sum(backoffs) <= 75  # "roughly a minute of attempts".


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, (1.0,)),
        (2, (2,)),
        ([10, 20, 30], [10, 20, 30]),
        ((), ()),
        ([], []),
    ],
)
def test_backoffs_and_delays_accept_single_numbers(value: Any, expected: Any) -> None:
    networking = NetworkingSettings()
    networking.error_backoffs = value
    assert networking.error_backoffs == expected
    assert NetworkingSettings(error_backoffs=value).error_backoffs == expected
    batching = BatchingSettings()
    batching.error_delays = value
    assert batching.error_delays == expected


def test_backoffs_accept_reiterable_objects() -> None:
    class Infinite:
        def __iter__(self) -> Iterator[float]:
            while True:
                yield 10

    backoffs = Infinite()
    settings = NetworkingSettings()
    settings.error_backoffs = backoffs
    assert settings.error_backoffs is backoffs


def test_persistence_defaults() -> None:
    settings = PersistenceSettings()
    assert settings.finalizer == "kopf.zalando.org/KopfFinalizerMarker"
    assert settings.consistency_timeout == 5.0
    assert isinstance(settings.progress_storage, SmartProgressStorage)
    assert isinstance(settings.diffbase_storage, AnnotationsDiffBaseStorage)
    assert settings.diffbase_storage.prefix == "kopf.zalando.org"
    assert settings.diffbase_storage.key == "last-handled-configuration"


def test_persistence_storages_can_be_replaced() -> None:
    settings = OperatorSettings()
    settings.persistence.finalizer = "my-operator.example.com/kopf-finalizer"
    settings.persistence.progress_storage = AnnotationsProgressStorage(prefix="my-op.example.com")
    settings.persistence.progress_storage = StatusProgressStorage(field="status.my-operator")
    settings.persistence.diffbase_storage = StatusDiffBaseStorage(field="status.diff-base")
    assert settings.persistence.finalizer == "my-operator.example.com/kopf-finalizer"


def test_documented_startup_configuration() -> None:
    settings = OperatorSettings()
    settings.posting.level = logging.WARNING
    settings.posting.enabled = False
    settings.watching.connect_timeout = 60
    settings.watching.server_timeout = 600
    settings.watching.client_timeout = 700
    settings.watching.reconnect_backoff = 1
    settings.networking.connect_timeout = 10
    settings.networking.request_timeout = 60
    settings.batching.error_delays = [10, 20, 30]
    settings.peering.priority = 100
    settings.peering.name = "example"
    settings.peering.mandatory = True
    settings.peering.standalone = True
    settings.peering.stealth = True
    settings.admission.managed = "auto.kopf.dev"
    assert settings.watching.server_timeout == 600
    assert settings.batching.error_delays == [10, 20, 30]


@pytest.mark.parametrize(
    "path",
    [  # every setting that the reference documentation's configuration chapter names
        "admission.managed",
        "admission.server",
        "batching.error_delays",
        "execution.executor",
        "execution.max_workers",
        "networking.connect_timeout",
        "networking.error_backoffs",
        "networking.request_timeout",
        "peering.mandatory",
        "peering.name",
        "peering.priority",
        "peering.standalone",
        "peering.stealth",
        "persistence.diffbase_storage",
        "persistence.finalizer",
        "persistence.progress_storage",
        "posting.enabled",
        "posting.level",
        "watching.client_timeout",
        "watching.connect_timeout",
        "watching.reconnect_backoff",
        "watching.server_timeout",
    ],
)
def test_every_documented_setting_exists_and_is_settable(path: str) -> None:
    settings = OperatorSettings()
    section_name, name = path.split(".")
    section = getattr(settings, section_name)
    value = getattr(section, name)
    setattr(section, name, value)  # accepted: it is a known setting
