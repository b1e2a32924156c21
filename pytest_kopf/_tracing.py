"""The trace of one run: typed entries for the steps, the operator's requests and their responses, the cluster's
changes, the watch events delivered to the operator, kopf's log records and the faults injected.

The judges of the checks (:mod:`pytest_kopf._judges`) and the derivation of the fault plans
read the entries as objects; :meth:`Entry.render` turns one into a line of text, for display only (a failure's
trace tail, the determinism tests). Each entry is stamped with the loop's (virtual) time, in the order things
happen. Nothing in it comes from the wall clock, random uids or hash order, so the same seed and the same actions
give the same trace, byte for byte. The log records of one run are told from another's (two runs alternate in
one process when a check compares them) by which run is :meth:`Trace.active` at the moment.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, TypeVar

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler

from kopf_sim.http.faults import classify
from kopf_sim.kube.resources import ResourceType
from kopf_sim.store import watching
from kopf_sim.store.cluster import Cluster

from . import _routing as routing
from ._bookkeeping import users_annotations
from .cluster import KopfCluster, SimKopfCluster

__all__ = [
    "CAUSE_HEADER",
    "HANDLER_HEADER",
    "Change",
    "Delivery",
    "Entry",
    "Fault",
    "Log",
    "Note",
    "Request",
    "Response",
    "Step",
    "Trace",
    "digest",
    "essence",
    "record_trace",
    "tagging_handlers",
]

#: The request header that names the kopf handler whose code made the request (set on the operator's side).
HANDLER_HEADER = "X-Kopf-Sim-Handler"
#: The request header that tells which object that handler handles, in which state (``ns/name@digest``).
CAUSE_HEADER = "X-Kopf-Sim-Cause"
#: The request header that tells the reason of the change being handled (``create``, ``update``...) when the request
#: was made: by its handlers, or by kopf for them (the patch of their outcome).
REASON_HEADER = "X-Kopf-Sim-Reason"

_E = TypeVar("_E", bound="Entry")
_active: Trace | None = None


@dataclasses.dataclass(frozen=True)
class Entry(abc.ABC):
    """One happening of a run, at a moment of the loop's time."""

    kind: ClassVar[str] = "entry"
    time: float

    @abc.abstractmethod
    def text(self) -> str:
        """What happened, as the trace's line tells it (after the time and the kind)."""

    def render(self) -> str:
        """The entry as a line of the trace's text: ``<time> <kind> <text>``."""
        return f"{self.time:.6f} {self.kind} {self.text()}"


@dataclasses.dataclass(frozen=True)
class Step(Entry):
    """A step of the run (a user's action or a perturbation), as the line of a test that does it."""

    kind: ClassVar[str] = "action"
    code: str
    restarts: bool = False  # the step replaces the operator by a fresh one (a crash, a restart)
    user: bool = True  # a user's action (done in every world), not a perturbation

    def text(self) -> str:
        return self.code


@dataclasses.dataclass(frozen=True)
class Request(Entry):
    """A request of the operator: its method, path, query and body; the handler whose code made it, if known."""

    kind: ClassVar[str] = "request"
    method: str
    path: str
    query: str = ""
    body: str = ""
    handler: str | None = None
    #: The object that the handler handles, and its state (``ns/name@digest``), if a handler made the request.
    cause: str | None = None
    #: The reason of the change being handled (``create``, ``update``...), if the request was made for one.
    reason: str | None = None
    #: What the request addresses as it was when it came: the object (None: absent), or a collection's objects.
    addressed: Any = dataclasses.field(default=NotImplemented, compare=False, repr=False)

    @functools.cached_property
    def state(self) -> str | None:
        """The state of what the request addresses when it came (the object's, or the collection's): a digest."""
        if self.addressed is NotImplemented:
            return None
        if self.addressed is None:
            return "absent"
        if isinstance(self.addressed, tuple):
            return digest(sorted(_essence_text(obj) for obj in self.addressed))
        return digest(essence(self.addressed))

    def text(self) -> str:
        query = f"?{self.query}" if self.query else ""
        return f"{self.method} {self.path}{query}{' ' + self.body if self.body else ''}"

    @property
    def watch(self) -> bool:
        return any(part in ("watch=true", "watch=1") for part in self.query.split("&"))

    @functools.cached_property
    def payload(self) -> Any:
        """The body as JSON (None if there is none, or it is not JSON)."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    def annotations(self) -> dict[str, Any]:
        """The annotations that the body sets (a patch's or a whole object's)."""
        payload = self.payload
        metadata = payload.get("metadata") if isinstance(payload, dict) else None
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        return annotations if isinstance(annotations, dict) else {}


@dataclasses.dataclass(frozen=True)
class Response(Entry):
    """The answer to a request: its status code, or the exception that cut it off."""

    kind: ClassVar[str] = "response"
    method: str
    path: str
    status: int | None = None
    error: str | None = None
    request: Request | None = dataclasses.field(default=None, compare=False, repr=False)

    def text(self) -> str:
        return f"{self.status if self.error is None else self.error} {self.method} {self.path}"


@dataclasses.dataclass(frozen=True)
class _ObjectEvent(Entry):
    type: str  # ADDED, MODIFIED, DELETED
    group: str
    plural: str
    namespace: str | None
    name: str
    rv: int
    #: The object as committed (or delivered): for the reports' details, never compared.
    obj: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False, repr=False)

    @functools.cached_property
    def state(self) -> str | None:
        """The object's essence after it: a digest."""
        return digest(essence(self.obj)) if self.obj is not None else None

    @property
    def resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def where(self) -> str:
        return f"{self.namespace + '/' if self.namespace else ''}{self.name}"

    def text(self) -> str:
        return f"{self.type} {self.resource} {self.where} rv={self.rv}"


@dataclasses.dataclass(frozen=True)
class Change(_ObjectEvent):
    """A change committed to the cluster's store (by anyone)."""

    kind: ClassVar[str] = "change"
    #: The object before the change (None for ADDED): for the reports' details, never compared.
    old: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Delivery(_ObjectEvent):
    """A watch event sent to a watcher (the operator's watch streams)."""

    kind: ClassVar[str] = "event"


@dataclasses.dataclass(frozen=True)
class Fault(Entry):
    """A fault injected into the run, as the fault injector describes it (with its seeded draws)."""

    kind: ClassVar[str] = "fault"
    description: str

    def text(self) -> str:
        return self.description


@dataclasses.dataclass(frozen=True)
class Log(Entry):
    """A log record of kopf (or of the operator's handlers, through kopf's loggers)."""

    kind: ClassVar[str] = "log"
    level: str
    namespace: str | None
    name: str | None
    message: str
    record: logging.LogRecord = dataclasses.field(compare=False, repr=False)

    @property
    def where(self) -> str | None:
        if self.name is None:
            return None
        return f"{self.namespace + '/' if self.namespace else ''}{self.name}"

    def text(self) -> str:
        where = f" [{self.where}]" if self.where is not None else ""
        return f"{self.level}{where} {self.message}"


@dataclasses.dataclass(frozen=True)
class Note(Entry):
    """Something the harness says about the run (e.g. that a user's action went otherwise than in another run)."""

    label: str
    description: str

    def text(self) -> str:
        return self.description

    def render(self) -> str:
        return f"{self.time:.6f} {self.label} {self.description}"


class _Dispatcher(logging.Handler):
    """Sends the records of the ``kopf`` loggers to the trace of the run active now (if any)."""

    def emit(self, record: logging.LogRecord) -> None:
        trace = _active
        if trace is not None:
            trace.log(record)


_dispatcher = _Dispatcher(logging.DEBUG)


class _Tee(list[str]):
    """The fault injector's log, copied into the trace as it grows."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace

    def append(self, line: str) -> None:
        super().append(line)
        self.trace.append(Fault(self.trace.now(), line.split(" ", 1)[-1]))


class Trace:
    """The entries of one run (see the module's docs)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.entries: list[Entry] = []
        self._store: Cluster | None = None
        #: Whether kopf's log records go into this trace (they do while it is :meth:`active`).
        self.logs_recorded = False

    def now(self) -> float:
        return self.loop.time()

    def append(self, entry: Entry) -> None:
        self.entries.append(entry)

    def step(self, code: str, *, restarts: bool = False, user: bool = True) -> None:
        self.append(Step(self.now(), code, restarts, user))

    def note(self, label: str, text: str) -> None:
        self.append(Note(self.now(), label, text))

    def of(self, kind: type[_E]) -> list[_E]:
        """The entries of one type, in order."""
        return [entry for entry in self.entries if isinstance(entry, kind)]

    @property
    def records(self) -> list[logging.LogRecord]:
        """The kopf log records of the run."""
        return [entry.record for entry in self.entries if isinstance(entry, Log)]

    @property
    def lines(self) -> list[str]:
        """The entries rendered as lines of text (for display)."""
        return [entry.render() for entry in self.entries]

    def install(self, cluster: KopfCluster) -> None:
        """Record the operator's requests, the changes, the watch events delivered and the faults of a cluster."""
        if not isinstance(cluster, SimKopfCluster):
            raise TypeError("A trace records a simulated cluster only (kopf_cluster in sim mode).")
        self._store = cluster.sim.store
        cluster.sim.taps.append(self._tap)
        cluster.sim.store.observers.append(self._change)
        cluster.sim.store.deliveries.append(self._delivery)
        cluster.sim.faults.log = _Tee(self)
        kopf_logger = logging.getLogger("kopf")
        if _dispatcher not in kopf_logger.handlers:
            kopf_logger.addHandler(_dispatcher)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Route the kopf log records to this trace meanwhile (its run is the one running now)."""
        global _active
        previous, _active = _active, self
        self.logs_recorded = True
        try:
            yield
        finally:
            _active = previous

    def log(self, record: logging.LogRecord) -> None:
        ref: Any = getattr(record, "k8s_ref", None)
        namespace = name = None
        if isinstance(ref, dict):
            namespace, name = ref.get("namespace") or None, str(ref.get("name"))
        self.append(Log(self.now(), record.levelname, namespace, name, record.getMessage(), record))

    def _change(self, change: watching.Change) -> None:
        identity = _identity(change.key, change.obj, change.rv)
        self.append(Change(self.now(), change.type, *identity, obj=change.obj, old=change.old))

    def _delivery(self, rtype: ResourceType, event: watching.WatchEvent) -> None:
        self.append(Delivery(self.now(), event.type, *_identity(rtype.storage_key, event.obj, event.rv), obj=event.obj))

    async def _tap(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        body = (await request.read()).decode("utf-8", "replace") if request.can_read_body else ""
        by = request.headers.get(HANDLER_HEADER) or None
        cause = request.headers.get(CAUSE_HEADER) or None
        reason = request.headers.get(REASON_HEADER) or None
        addressed = self._addressed(request) if self._store is not None else NotImplemented
        asked = Request(
            self.now(), request.method, request.path, request.query_string, body, by, cause, reason, addressed
        )
        self.append(asked)
        try:
            response = await handler(request)
        except BaseException as exc:
            self.append(Response(self.now(), request.method, request.path, error=type(exc).__name__, request=asked))
            raise
        self.append(Response(self.now(), request.method, request.path, status=response.status, request=asked))
        return response

    def _addressed(self, request: web.Request) -> Any:
        """What a request addresses as it is now: its object (None: absent), or its collection's objects.

        The store's objects are snapshots (never changed once stored): their digests are made when needed.
        """
        assert self._store is not None
        info = classify(request.method, request.path, request.query)
        if info.resource is None:
            return NotImplemented
        key = (info.group or "", info.resource)
        if info.name is not None:
            return self._store.peek(key, info.namespace, info.name)
        return tuple(self._store.objects(key, info.namespace))

    def tail(self, lines: int = 40, width: int = 240) -> list[str]:
        """The last lines, each cut to a readable width."""
        rendered = [entry.render() for entry in self.entries[-lines:]]
        return [line if len(line) <= width else line[: width - 3] + "..." for line in rendered]

    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


def _identity(key: tuple[str, str], obj: dict[str, Any], rv: int) -> tuple[str, str, str | None, str, int]:
    metadata = obj.get("metadata") or {}
    group, plural = key
    return group, plural, metadata.get("namespace") or None, str(metadata.get("name")), rv


def handler_header() -> dict[str, str]:
    """The headers that name the kopf handler whose code runs in this context (none outside of handlers), the
    state of the object that it handles (:data:`CAUSE_HEADER`), and the reason of the change being handled
    (:data:`REASON_HEADER`: also on kopf's own patch of the handlers' outcome)."""
    from kopf._kits.testing import current_changing_reason, current_handler_id, get_current_body

    reason = current_changing_reason()
    headers = {REASON_HEADER: reason} if reason is not None else {}
    handler = current_handler_id()
    if handler is None:
        return headers
    headers[HANDLER_HEADER] = str(handler)
    body = get_current_body()
    if body is not None:
        where = f"{body.metadata.namespace or ''}/{body.metadata.name}"
        headers[CAUSE_HEADER] = f"{where}@{digest(essence(body))}"
    return headers


routing.HEADER_HOOKS.append(handler_header)  # the sync clients' requests (in the handlers' threads) are tagged too


def tagging_handlers(factory: Callable[[], aiohttp.BaseConnector]) -> Callable[[], aiohttp.BaseConnector]:
    """Connectors that mark each request with the kopf handler whose code makes it (:data:`HANDLER_HEADER`).

    The connector is asked for a connection in the task that makes the request, where kopf's context of the
    handler being invoked is visible; the request's headers are still to be sent then.
    """

    def make() -> aiohttp.BaseConnector:
        connector = factory()
        connect = connector.connect

        async def tagged_connect(req: Any, *args: Any, **kwargs: Any) -> Any:
            req.headers.update(handler_header())
            return await connect(req, *args, **kwargs)

        connector.connect = tagged_connect  # type: ignore[method-assign]
        return connector

    return make


#: Metadata that differs between two equal states of an object (or is kopf's bookkeeping), left out of its essence.
_VOLATILE = frozenset({"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"})
#: An object's top-level fields that are not its essence: the metadata (kept in part, below) and the status.
_ASIDE = frozenset({"metadata", "status"})


def essence(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What an object's state is about, for telling two states apart: no status, no volatile or kopf's metadata."""
    # The status aside before copying (often the bulk of an object: kopf's progress, the handlers' results).
    plain: dict[str, Any] = {str(key): _plain(value) for key, value in obj.items() if key not in _ASIDE}
    metadata: dict[str, Any] = _plain(obj.get("metadata") or {})
    for field in _VOLATILE:
        metadata.pop(field, None)
    if metadata.get("generateName"):
        metadata["name"] = f"{metadata['generateName']}*"  # a drawn suffix: the same state under another name
    for ref in metadata.get("ownerReferences") or ():
        ref.pop("uid", None)
    metadata["annotations"] = users_annotations(metadata.get("annotations"))
    if "deletionTimestamp" in metadata:
        metadata["deletionTimestamp"] = True
    plain["metadata"] = metadata
    return plain


#: The essences of the stored objects that lists address, as JSON, by the object's identity (with the object, so
#: that its id is not taken by another meanwhile): a list addresses the same snapshots again and again.
_essence_texts: dict[int, tuple[Mapping[str, Any], str]] = {}
_ESSENCE_TEXTS_KEPT = 4096


def _essence_text(obj: Mapping[str, Any]) -> str:
    """``json.dumps(essence(obj), sort_keys=True)`` of a stored object (a snapshot: never changed once stored)."""
    known = _essence_texts.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]
    text = json.dumps(essence(obj), sort_keys=True)
    if len(_essence_texts) >= _ESSENCE_TEXTS_KEPT:
        _essence_texts.clear()
    _essence_texts[id(obj)] = (obj, text)
    return text


def digest(value: Any) -> str:
    """A short digest of JSON data (the same data, the same digest, in every process)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def record_trace(kopf_cluster: KopfCluster) -> Trace:
    """A trace of a test's simulated cluster from now on (requests, changes, watch events, faults; no logs).

    The reproductions of the checks give it to :func:`~pytest_kopf.checks.verify`, whose judges read it.
    """
    trace = Trace(asyncio.get_running_loop())
    trace.install(kopf_cluster)
    return trace
