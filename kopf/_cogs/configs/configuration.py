"""
Operator settings: every tunable aspect of the framework, with defaults.

Every operator has its own :class:`OperatorSettings` (several operators can
run in one process), usually adjusted in the startup handlers. The settings
are grouped by topic into sub-settings; all of them are plain mutable
dataclasses, so they can be changed at any time, though most of them are
read by the framework only at startup or at the beginning of an activity.
"""

import concurrent.futures
import dataclasses
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, ClassVar

from kopf._cogs.configs import diffbase, progress

#: The default finalizer name, as hard-coded in the older versions of the framework.
DEFAULT_FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"

#: Fibonacci numbers from 1 second to ~10 minutes: ~27 minutes of throttling before staying at the max.
DEFAULT_ERROR_DELAYS: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610)

#: Roughly a minute of retries of the API errors before escalating them.
DEFAULT_ERROR_BACKOFFS: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21)


def _normalize_delays(value: Any) -> Any:
    """A single number means a single delay: ``1.0`` is the same as ``(1.0,)``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (value,)
    return value


class _StrictSection:
    """
    Refuses the attributes that are not settings: a typo must fail loudly, not be ignored silently.

    Without this, ``settings.execution.defualt_backoff = 5`` adds an attribute that nothing reads.
    """

    _section: ClassVar[str] = ""

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in self._valid_names():
            valid = ", ".join(sorted(self._valid_names()))
            where = f"settings.{self._section}" if self._section else "settings"
            raise AttributeError(f"{where} has no setting {name!r}. The valid ones are: {valid}.")
        super().__setattr__(name, value)

    @classmethod
    def _valid_names(cls) -> frozenset[str]:
        """The fields, the settable properties, and what the subclasses declare (e.g. in the test tools).

        Once per class: every setting set (every fresh ``OperatorSettings`` sets them all) asks for them.
        """
        names = _VALID_NAMES.get(cls)
        if names is None:
            names = _VALID_NAMES[cls] = cls._collect_valid_names()
        return names

    @classmethod
    def _collect_valid_names(cls) -> frozenset[str]:
        fields = {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
        properties = {
            name
            for klass in cls.__mro__
            for name, value in vars(klass).items()
            if isinstance(value, property) and value.fset is not None
        }
        declared = {
            name
            for klass in cls.__mro__
            for name in vars(klass).get("__annotations__", {})
            if name not in ("_section",)
        }
        return frozenset(fields | properties | declared)


_VALID_NAMES: weakref.WeakKeyDictionary[type, frozenset[str]] = weakref.WeakKeyDictionary()


class SelectorMapping(dict[str, str]):
    """
    Per-resource values (e.g. label selectors of the watch-requests), keyed by a resource's name.

    A key is any name of a resource, as in the decorators: its plural, singular, kind, a shortcut,
    optionally with the group (``'kopf.dev/kopfexamples'``, or a tuple ``('kopf.dev', 'kopfexamples')``).
    """

    def __setitem__(self, key: str | tuple[str, ...], value: str) -> None:
        super().__setitem__("/".join(key) if isinstance(key, tuple) else key, value)

    def __getitem__(self, key: str | tuple[str, ...]) -> str:
        return super().__getitem__("/".join(key) if isinstance(key, tuple) else key)

    def lookup(self, *, group: str, names: Iterable[str | None]) -> str | None:
        """The value for a resource known by these names in this group (the grouped keys first)."""
        candidates = [name for name in names if name]
        for name in candidates:
            for key in (f"{group}/{name}", name) if group else (name,):
                if key in self:
                    return super().__getitem__(key)
        return None


@dataclasses.dataclass
class ProcessSettings(_StrictSection):
    """Settings of the operator's process as a whole."""

    _section = "process"

    #: How long to wait (seconds) for the graceful exit on termination signals before exiting anyway.
    ultimate_exiting_timeout: float | None = 10 * 60


@dataclasses.dataclass
class PostingSettings(_StrictSection):
    """Which log messages of the objects' loggers are also posted as Kubernetes events, and how."""

    _section = "posting"

    #: Whether to post the events at all (it also affects ``kopf.event()``, ``kopf.info()``, etc).
    enabled: bool = True

    #: Whether the messages of the objects' loggers (of ``level`` and above) are posted as events too.
    #: On by default, as documented (the published framework 1.45 has it off: only ``kopf.event()`` & co).
    loggers: bool = True

    #: The minimal level of log messages to be posted (e.g. ``logging.WARNING``).
    level: int = logging.INFO

    #: The delays (seconds) between the retries of posting the explicit events (``kopf.event()`` & co).
    default_backoffs: Iterable[float] = DEFAULT_ERROR_BACKOFFS

    #: The delays (seconds) between the retries of posting the logged messages as events.
    logging_backoffs: Iterable[float] = (1, 1, 2, 3, 5)

    #: How many events are posted at once at most; ``None`` for no limit.
    worker_limit: int | None = None

    #: How long (seconds) an idle posting worker waits for more events before exiting.
    idle_timeout: float = 1.0

    #: The ``reportingComponent`` of the posted events (and ``source.component``).
    reporting_component: str = "kopf"

    #: The ``reportingInstance`` of the posted events.
    reporting_instance: str = "dev"

    #: The prefix of the generated names of the posted events.
    event_name_prefix: str = "kopf-event-"

    def __setattr__(self, name: str, value: Any) -> None:
        normalized = name in ("default_backoffs", "logging_backoffs")
        super().__setattr__(name, _normalize_delays(value) if normalized else value)


@dataclasses.dataclass
class PeeringSettings(_StrictSection):
    """How the operators see each other to avoid handling the same objects at the same time."""

    _section = "peering"

    #: The name of the peering object (``ClusterKopfPeering`` or ``KopfPeering``).
    name: str = "default"

    #: Whether the peering object must exist (if absent, the operator pauses until it appears).
    mandatory: bool = False

    #: Whether to skip peering completely, regardless of the peering objects.
    standalone: bool = False

    #: Whether the keep-alives are not logged (they are sent anyway).
    stealth: bool = False

    #: The priority among the peers: the operators with lower priorities pause.
    priority: int = 0

    #: How long (seconds) a peer is considered alive after its last keep-alive.
    lifetime: int = 60

    #: Whether the operator serves the whole cluster (cluster peering) or namespaces (namespaced peering).
    clusterwide: bool = False

    @property
    def namespaced(self) -> bool:
        return not self.clusterwide

    @namespaced.setter
    def namespaced(self, value: bool) -> None:
        self.clusterwide = not value


@dataclasses.dataclass
class WatchingSettings(_StrictSection):
    """The streams of the watch-requests to the Kubernetes API."""

    _section = "watching"

    #: The server-side timeout (seconds) of a watch-request (``?timeoutSeconds=``); ``None`` for the server's.
    server_timeout: float | None = None

    #: The client-side timeout (seconds) of a whole watch-request, incl. connecting and streaming.
    client_timeout: float | None = None

    #: The TCP handshake timeout (seconds); ``None`` for ``networking.connect_timeout``/``request_timeout``.
    connect_timeout: float | None = None

    #: The pause (seconds) between the watch-requests, to not flood the API on errors or disconnects.
    reconnect_backoff: float = 0.1

    #: How long (seconds) a stream can be silent before it is considered stuck and restarted.
    inactivity_timeout: float | None = 70.0

    #: How many objects per page the initial listings request (``?limit=``); ``None`` for all at once.
    chunk_size: int | None = None

    #: Whether to start the watch-streams with the current objects instead of a listing (``sendInitialEvents``).
    #: Not supported here: the listing is always made (a warning is logged if enabled).
    initial_streaming: bool = False

    #: Per-resource label selectors of the listings and watch-streams, e.g. ``['pods'] = 'app=x'``.
    label_selectors: SelectorMapping = dataclasses.field(default_factory=SelectorMapping)

    #: Per-resource field selectors of the listings and watch-streams, e.g. ``['pods'] = 'spec.nodeName=n1'``.
    field_selectors: SelectorMapping = dataclasses.field(default_factory=SelectorMapping)

    #: Per-resource selectors of the shards. Not supported here (a warning is logged if set).
    shard_selectors: SelectorMapping = dataclasses.field(default_factory=SelectorMapping)


@dataclasses.dataclass
class BatchingSettings(_StrictSection):
    """
    The per-object queues of events and their workers (formerly "queueing").

    The events arriving in quick succession are batched: only the latest one is
    processed, since only the latest state of an object matters.
    """

    _section = "batching"

    #: The maximum number of workers (objects processed concurrently); ``None`` for unlimited.
    worker_limit: int | None = None

    #: How long (seconds) an object with no new events stays in work: its next events go to work at once.
    idle_timeout: float = 5.0

    #: How long (seconds) to wait for more events of an object after each one, to batch them.
    batch_window: float = 0.1

    #: How long (seconds) to wait for the workers to finish when the operator exits.
    exit_timeout: float = 2.0

    #: The delays (seconds) after the framework's errors per object; the last one repeats forever.
    error_delays: Iterable[float] = DEFAULT_ERROR_DELAYS

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, _normalize_delays(value) if name == "error_delays" else value)


@dataclasses.dataclass
class ScanningSettings(_StrictSection):
    """The discovery of the served resources and namespaces in the cluster."""

    _section = "scanning"

    #: Whether to skip the scanning (e.g. without the permissions for the cluster-wide discovery).
    disabled: bool = False


WebhookServerLike = Callable[[Any], AsyncIterator[Any]]


@dataclasses.dataclass
class AdmissionSettings(_StrictSection):
    """The admission webhooks: where they are served and how they are registered."""

    _section = "admission"

    #: A webhook server or tunnel (e.g. ``kopf.WebhookServer()``); ``None`` to serve no webhooks.
    server: WebhookServerLike | None = None

    #: The name of the webhook configurations to manage; ``None`` to leave them to the developers.
    managed: str | None = None


@dataclasses.dataclass
class ExecutionSettings(_StrictSection):
    """The executor of the synchronous handlers and daemons (a thread pool by default)."""

    _section = "execution"

    executor: concurrent.futures.Executor = dataclasses.field(default_factory=concurrent.futures.ThreadPoolExecutor)

    #: The delay (seconds) before retrying a failed handler, if its decorator sets no ``backoff=``.
    default_backoff: float = 60

    @property
    def max_workers(self) -> int | None:
        return getattr(self.executor, "_max_workers", None)

    @max_workers.setter
    def max_workers(self, value: int) -> None:
        # The thread pool starts its threads on demand and checks the limit on every new task,
        # so changing the limit of the existing executor is enough; the running tasks stay where they are.
        if not isinstance(self.executor, concurrent.futures.ThreadPoolExecutor):
            raise TypeError("The current executor does not support max_workers.")
        if value < 1:
            raise ValueError("max_workers cannot be less than 1.")
        self.executor._max_workers = value


@dataclasses.dataclass
class BackgroundSettings(_StrictSection):
    """The daemons and timers running in the background of the objects."""

    _section = "background"

    #: How often (seconds) to check if a daemon has exited after being cancelled (without a timeout).
    cancellation_polling: float = 60

    #: How long (seconds) the operator exiting waits for the daemons to exit instantly.
    instant_exit_timeout: float | None = None

    #: How many event-loop cycles to let the daemons exit instantly, with no time spent.
    instant_exit_zero_time_cycles: int | None = 10


@dataclasses.dataclass
class NetworkingSettings(_StrictSection):
    """The requests to the Kubernetes API (except the watch-streams for the timeouts)."""

    _section = "networking"

    #: The timeout (seconds) of a whole regular request.
    request_timeout: float | None = 5 * 60

    #: The TCP handshake timeout (seconds) of a regular request; ``None`` for no specific limit.
    connect_timeout: float | None = None

    #: The back-offs (seconds) between the retries of the networking & 5xx errors; then they escalate.
    error_backoffs: Iterable[float] = DEFAULT_ERROR_BACKOFFS

    #: Whether the server's ``Retry-After`` replaces the own back-off for the 5xx errors too (always for 429).
    enforce_retry_after: bool = False

    #: Whether the HTTP sessions take the proxies & ``.netrc`` from the environment (``HTTPS_PROXY``, etc).
    trust_env: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, _normalize_delays(value) if name == "error_backoffs" else value)


@dataclasses.dataclass
class PersistenceSettings(_StrictSection):
    """Where and how the framework keeps its state on the objects."""

    _section = "persistence"

    #: The finalizer that blocks the deletion of the objects until the deletion handlers succeed.
    finalizer: str = DEFAULT_FINALIZER

    #: The storage of the handlers' progress (retries, delays, successes, failures).
    progress_storage: progress.ProgressStorage = dataclasses.field(default_factory=progress.SmartProgressStorage)

    #: The storage of the last handled state of the objects, for the change detection.
    diffbase_storage: diffbase.DiffBaseStorage = dataclasses.field(default_factory=diffbase.AnnotationsDiffBaseStorage)

    #: How long (seconds) to wait for the object's version that follows the framework's own patch.
    consistency_timeout: float = 5.0


@dataclasses.dataclass
class OperatorSettings(_StrictSection):
    """All settings of one operator, grouped by topic."""

    process: ProcessSettings = dataclasses.field(default_factory=ProcessSettings)
    posting: PostingSettings = dataclasses.field(default_factory=PostingSettings)
    peering: PeeringSettings = dataclasses.field(default_factory=PeeringSettings)
    watching: WatchingSettings = dataclasses.field(default_factory=WatchingSettings)
    queueing: BatchingSettings = dataclasses.field(default_factory=BatchingSettings)
    scanning: ScanningSettings = dataclasses.field(default_factory=ScanningSettings)
    admission: AdmissionSettings = dataclasses.field(default_factory=AdmissionSettings)
    execution: ExecutionSettings = dataclasses.field(default_factory=ExecutionSettings)
    background: BackgroundSettings = dataclasses.field(default_factory=BackgroundSettings)
    networking: NetworkingSettings = dataclasses.field(default_factory=NetworkingSettings)
    persistence: PersistenceSettings = dataclasses.field(default_factory=PersistenceSettings)

    @property
    def batching(self) -> BatchingSettings:
        """The newer name of :attr:`queueing` (the constructor's argument keeps the older name)."""
        return self.queueing

    @batching.setter
    def batching(self, value: BatchingSettings) -> None:
        self.queueing = value
