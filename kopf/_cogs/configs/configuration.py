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
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from kopf._cogs.configs import diffbase, progress

#: The default finalizer name, as hard-coded in the older versions of the framework.
DEFAULT_FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'

#: Fibonacci numbers from 1 second to ~10 minutes: ~27 minutes of throttling before staying at the max.
DEFAULT_ERROR_DELAYS: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610)

#: Roughly a minute of retries of the API errors before escalating them.
DEFAULT_ERROR_BACKOFFS: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21)


def _normalize_delays(value: Any) -> Any:
    """A single number means a single delay: ``1.0`` is the same as ``(1.0,)``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (value,)
    return value


@dataclasses.dataclass
class ProcessSettings:
    """Settings of the operator's process as a whole."""

    #: How long to wait (seconds) for the graceful exit on termination signals before exiting anyway.
    ultimate_exiting_timeout: float | None = 10 * 60


@dataclasses.dataclass
class PostingSettings:
    """Which log messages of the objects' loggers are also posted as Kubernetes events."""

    #: Whether to post the events at all (it also affects ``kopf.event()``, ``kopf.info()``, etc).
    enabled: bool = True

    #: The minimal level of log messages to be posted (e.g. ``logging.WARNING``).
    level: int = logging.INFO


@dataclasses.dataclass
class PeeringSettings:
    """How the operators see each other to avoid handling the same objects at the same time."""

    #: The name of the peering object (``ClusterKopfPeering`` or ``KopfPeering``).
    name: str = 'default'

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
class WatchingSettings:
    """The streams of the watch-requests to the Kubernetes API."""

    #: The server-side timeout (seconds) of a watch-request (``?timeoutSeconds=``); ``None`` for the server's.
    server_timeout: float | None = None

    #: The client-side timeout (seconds) of a whole watch-request, incl. connecting and streaming.
    client_timeout: float | None = None

    #: The TCP handshake timeout (seconds); ``None`` for ``networking.connect_timeout``/``request_timeout``.
    connect_timeout: float | None = None

    #: The pause (seconds) between the watch-requests, to not flood the API on errors or disconnects.
    reconnect_backoff: float = 0.1

    #: How long (seconds) a stream can be silent before it is considered stuck and restarted.
    inactivity_timeout: float | None = 70


@dataclasses.dataclass
class BatchingSettings:
    """
    The per-object queues of events and their workers (formerly "queueing").

    The events arriving in quick succession are batched: only the latest one is
    processed, since only the latest state of an object matters.
    """

    #: The maximum number of workers (objects processed concurrently); ``None`` for unlimited.
    worker_limit: int | None = None

    #: How long (seconds) an idle worker of an object waits for new events before exiting.
    idle_timeout: float = 5.0

    #: How long (seconds) to wait for more events of an object after each one, to batch them.
    batch_window: float = 0.1

    #: How long (seconds) to wait for the workers to finish when the operator exits.
    exit_timeout: float = 2.0

    #: The delays (seconds) after the framework's errors per object; the last one repeats forever.
    error_delays: Iterable[float] = DEFAULT_ERROR_DELAYS

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, _normalize_delays(value) if name == 'error_delays' else value)


@dataclasses.dataclass
class ScanningSettings:
    """The discovery of the served resources and namespaces in the cluster."""

    #: Whether to skip the scanning (e.g. without the permissions for the cluster-wide discovery).
    disabled: bool = False


WebhookServerLike = Callable[[Any], AsyncIterator[Any]]


@dataclasses.dataclass
class AdmissionSettings:
    """The admission webhooks: where they are served and how they are registered."""

    #: A webhook server or tunnel (e.g. ``kopf.WebhookServer()``); ``None`` to serve no webhooks.
    server: WebhookServerLike | None = None

    #: The name of the webhook configurations to manage; ``None`` to leave them to the developers.
    managed: str | None = None


@dataclasses.dataclass
class ExecutionSettings:
    """The executor of the synchronous handlers and daemons (a thread pool by default)."""

    executor: concurrent.futures.Executor = dataclasses.field(
        default_factory=concurrent.futures.ThreadPoolExecutor)

    @property
    def max_workers(self) -> int | None:
        return getattr(self.executor, '_max_workers', None)

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
class BackgroundSettings:
    """The daemons and timers running in the background of the objects."""

    #: How often (seconds) to check if a daemon has exited after being cancelled (without a timeout).
    cancellation_polling: float = 60

    #: How long (seconds) the operator exiting waits for the daemons to exit instantly.
    instant_exit_timeout: float | None = None

    #: How many event-loop cycles to let the daemons exit instantly, with no time spent.
    instant_exit_zero_time_cycles: int | None = 10


@dataclasses.dataclass
class NetworkingSettings:
    """The requests to the Kubernetes API (except the watch-streams for the timeouts)."""

    #: The timeout (seconds) of a whole regular request.
    request_timeout: float | None = 5 * 60

    #: The TCP handshake timeout (seconds) of a regular request; ``None`` for no specific limit.
    connect_timeout: float | None = None

    #: The back-offs (seconds) between the retries of the networking & 5xx errors; then they escalate.
    error_backoffs: Iterable[float] = DEFAULT_ERROR_BACKOFFS

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, _normalize_delays(value) if name == 'error_backoffs' else value)


@dataclasses.dataclass
class PersistenceSettings:
    """Where and how the framework keeps its state on the objects."""

    #: The finalizer that blocks the deletion of the objects until the deletion handlers succeed.
    finalizer: str = DEFAULT_FINALIZER

    #: The storage of the handlers' progress (retries, delays, successes, failures).
    progress_storage: progress.ProgressStorage = dataclasses.field(
        default_factory=progress.SmartProgressStorage)

    #: The storage of the last handled state of the objects, for the change detection.
    diffbase_storage: diffbase.DiffBaseStorage = dataclasses.field(
        default_factory=diffbase.AnnotationsDiffBaseStorage)

    #: How long (seconds) to wait for the object's version that follows the framework's own patch.
    consistency_timeout: float = 5.0


@dataclasses.dataclass
class OperatorSettings:
    """All settings of one operator, grouped by topic."""

    process: ProcessSettings = dataclasses.field(default_factory=ProcessSettings)
    posting: PostingSettings = dataclasses.field(default_factory=PostingSettings)
    peering: PeeringSettings = dataclasses.field(default_factory=PeeringSettings)
    watching: WatchingSettings = dataclasses.field(default_factory=WatchingSettings)
    batching: BatchingSettings = dataclasses.field(default_factory=BatchingSettings)
    scanning: ScanningSettings = dataclasses.field(default_factory=ScanningSettings)
    admission: AdmissionSettings = dataclasses.field(default_factory=AdmissionSettings)
    execution: ExecutionSettings = dataclasses.field(default_factory=ExecutionSettings)
    background: BackgroundSettings = dataclasses.field(default_factory=BackgroundSettings)
    networking: NetworkingSettings = dataclasses.field(default_factory=NetworkingSettings)
    persistence: PersistenceSettings = dataclasses.field(default_factory=PersistenceSettings)

    @property
    def queueing(self) -> BatchingSettings:
        """The older name of :attr:`batching`, kept for the operators that still use it."""
        return self.batching

    @queueing.setter
    def queueing(self, value: BatchingSettings) -> None:
        self.batching = value
