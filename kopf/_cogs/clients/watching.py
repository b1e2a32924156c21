"""
Watching the resources: an endless stream of raw watch-events, with no losses or duplicates.

Three levels, each built on the previous one:

* :func:`streaming_watch` — one watch-request: a stream of JSON lines until it ends
  (by the server's ``timeoutSeconds``, the client's timeout, the inactivity timeout,
  a disconnect, or an interruption). Bookmarks are requested. Malformed lines are logged
  and skipped; a truncated tail is logged and dropped (it is re-delivered after resuming).
  An ``ERROR`` event with a 410 Status, as well as the HTTP 410, raises :class:`APIGoneError`.

* :func:`continuous_watch` — list, then watch, then watch again from the last seen
  ``resourceVersion`` (incl. the bookmarks' ones) after every end of a stream, with
  ``settings.watching.reconnect_backoff`` in between. On 410 ("the version is too old"),
  it lists again and yields the differences from what was seen before: the objects new or
  changed since with the type ``None`` (listed, as the published Kopf yields every object of its
  listings: an event handler that acts on ``ADDED``/``MODIFIED`` only misses the changes made
  while the stream was broken), the gone ones as ``DELETED`` (with the last seen body) — so
  nothing is lost or duplicated. The objects of the very first listing have the type ``None`` too.

* :func:`infinite_watch` — the same, but stops streaming while the operator is paused
  (e.g. by a peer with a higher priority) and lists everything anew on resume (every object
  with the type ``None`` again, and the gone ones as ``DELETED``); and stops completely when
  the stop-flag is set.

The yielded events are raw: ``{"type": ..., "object": ...}``. Bookmarks are not yielded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import json
import logging
import sys
from collections.abc import AsyncGenerator
from typing import Any, NamedTuple, Protocol, cast

import aiohttp

from kopf._cogs.clients import api, errors, fetching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import RawBody, RawEvent
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource

default_logger = logging.getLogger(__name__)

#: The errors of an established stream that only mean "reconnect".
STREAM_ERRORS: tuple[type[BaseException], ...] = (
    aiohttp.ClientPayloadError,
    aiohttp.ClientConnectionError,
    asyncio.TimeoutError,
)


class WatchStreamError(Exception):
    """An ``ERROR`` event in a watch-stream (other than 410): the stream is restarted."""

    def __init__(self, error: errors.APIError) -> None:
        super().__init__(str(error))
        self.error = error


class Bookmark(enum.Enum):
    """Special markers in the stream of events (only if requested with ``markers=True``)."""

    LISTED = "LISTED"  # the initial listing is over: all objects that existed are yielded.


class PauseFlag(Protocol):
    """Anything that can tell if the operator is paused, and wait for the pause to begin or end."""

    def is_on(self) -> bool: ...

    async def wait_for(self, value: bool, /) -> object: ...


class Toggle:
    """A minimal on/off flag with waiting for either state (e.g. for "the operator is paused")."""

    def __init__(self, value: bool = False) -> None:
        self._value = value
        self._changed = asyncio.Condition()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {'on' if self._value else 'off'}>"

    def is_on(self) -> bool:
        return self._value

    def is_off(self) -> bool:
        return not self._value

    async def turn_to(self, value: bool) -> None:
        async with self._changed:
            self._value = value
            self._changed.notify_all()

    async def wait_for(self, value: bool) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self._value == value)


@dataclasses.dataclass
class WatchState:
    """
    What a watcher remembers between the streams: where to resume, and what was seen.

    The last seen body of every object is kept for the ``DELETED`` events of a re-listing (the objects
    gone meanwhile): as JSON, not as parsed dicts. A parsed body with its ``managedFields`` takes ~4 KB
    of dicts and strings, its JSON a third of that; with 10,000 objects watched, that is ~30 MiB for
    what is read only on a rare re-listing. A watch-event keeps its own line as received (no encoding);
    a listed object is encoded once.

    With ``whole_bodies=False``, only what identifies an object is kept (``apiVersion``, ``kind``, and the
    metadata's ``name``, ``namespace``, ``uid``, ``resourceVersion``; ~0.2 KB instead of ~1.3 KB), and the
    ``DELETED`` events of a re-listing carry only that: for the consumers that need no more of a gone object
    than to end what they keep for it (e.g. an operator with no event-watching handlers and no indices).
    """

    resource_version: str | None = None
    listed: bool = False
    whole_bodies: bool = True
    #: The next listing yields every object, changed or not (after a pause: their daemons & timers were stopped).
    relist_all: bool = False
    #: By uid: the resource version, and the JSON of a document with the last seen body under ``"object"``
    #: (or, without the whole bodies, what identifies the object).
    known: dict[str, tuple[str | None, bytes | _Identity]] = dataclasses.field(default_factory=dict)

    def remember(self, event_type: str | None, body: RawBody, line: bytes | None = None) -> bool:
        """
        Track the object; return False if this event is a duplicate of what was already seen.

        ``line`` is the watch-event's JSON as received (with the body under ``"object"``), if any.
        """
        uid = _uid(body)
        rv = _rv(body)
        if uid is None:
            return True
        if event_type == "DELETED":
            self.known.pop(uid, None)
            return True
        previous = self.known.get(uid)
        if previous is not None and rv is not None and previous[0] == rv:
            return False
        if not self.whole_bodies:  # the identity stays the same from version to version
            self.known[uid] = (rv, previous[1] if previous is not None else _Identity.of(body))
        else:
            self.known[uid] = (rv, line if line is not None else json.dumps({"object": body}).encode())
        return True

    def forget(self, uid: str) -> RawBody:
        """Stop tracking the object; return its last seen body (or what identifies it, see above)."""
        rv, kept = self.known.pop(uid)
        if isinstance(kept, _Identity):
            return kept.body(rv)
        body: RawBody = json.loads(kept)["object"]
        return body


class _Identity(NamedTuple):
    """What identifies an object (for a ``DELETED`` event), where its last seen body is not kept."""

    api_version: str | None
    kind: str | None
    name: str | None
    namespace: str | None
    uid: str | None

    @classmethod
    def of(cls, body: RawBody) -> _Identity:
        meta = body.get("metadata") or {}
        # The same few strings for every object of a resource: one copy of each (not one per object).
        return cls(
            _interned(body.get("apiVersion")),
            _interned(body.get("kind")),
            meta.get("name"),
            _interned(meta.get("namespace")),
            meta.get("uid"),
        )

    def body(self, resource_version: str | None) -> RawBody:
        metadata: dict[str, Any] = {"name": self.name}
        if self.namespace is not None:
            metadata["namespace"] = self.namespace
        if self.uid is not None:
            metadata["uid"] = self.uid
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return cast(RawBody, {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata})


def _interned(value: Any) -> Any:
    return sys.intern(value) if type(value) is str else value


def _uid(body: Any) -> str | None:
    meta = body.get("metadata") if isinstance(body, dict) else None
    uid = meta.get("uid") if isinstance(meta, dict) else None
    if uid is None and isinstance(meta, dict) and meta.get("name") is not None:
        return f"{meta.get('namespace') or ''}/{meta['name']}"
    return uid if isinstance(uid, str) else None


def _rv(body: Any) -> str | None:
    meta = body.get("metadata") if isinstance(body, dict) else None
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return str(rv) if rv is not None else None


async def _interrupted(stop: asyncio.Event | None, paused: PauseFlag | None) -> None:
    """Wait until the watching must be stopped or paused (forever if neither is given)."""
    waiters: list[asyncio.Task[Any]] = []
    if stop is not None:
        waiters.append(asyncio.create_task(stop.wait()))
    if paused is not None:
        waiters.append(asyncio.create_task(paused.wait_for(True)))
    if not waiters:
        await asyncio.Event().wait()
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)


def _must_stop(stop: asyncio.Event | None, paused: PauseFlag | None) -> bool:
    return (stop is not None and stop.is_set()) or (paused is not None and paused.is_on())


async def _sleep_unless(delay: float, stop: asyncio.Event | None, paused: PauseFlag | None) -> None:
    if delay <= 0:
        await asyncio.sleep(0)
        return
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(_interrupted(stop, paused), timeout=delay)


async def streaming_watch(
    *,
    resource: Resource,
    namespace: str | None,
    settings: OperatorSettings,
    resource_version: str | None = None,
    label_selector: fetching.LabelSelector | None = None,
    field_selector: str | None = None,
    stop: asyncio.Event | None = None,
    operator_paused: PauseFlag | None = None,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> AsyncGenerator[tuple[dict[str, Any], bytes], None]:
    """
    One watch-request: yield the raw watch-events (incl. ``BOOKMARK``) until the stream ends,
    each with its line as received (the watcher keeps the lines, not the parsed bodies: see WatchState).

    Raises :class:`errors.APIGoneError` on 410 (HTTP or in-stream); other in-stream ``ERROR``
    events raise :class:`WatchStreamError` (with the :class:`errors.APIError` inside).
    Disconnects and timeouts simply end the stream (the caller resumes).
    """
    logger = logger if logger is not None else default_logger
    params: dict[str, str] = {"watch": "true", "allowWatchBookmarks": "true"}
    if resource_version:
        params["resourceVersion"] = resource_version
    labels = fetching.build_label_selector(label_selector)
    if labels:
        params["labelSelector"] = labels
    if field_selector:
        params["fieldSelector"] = field_selector
    if settings.watching.server_timeout is not None:
        params["timeoutSeconds"] = str(max(1, int(settings.watching.server_timeout)))

    url = resource.get_url(namespace=namespace)
    inactivity = settings.watching.inactivity_timeout
    async with api.stream(url, params=params, settings=settings, logger=logger, vault=vault) as response:
        watcher = asyncio.create_task(_interrupted(stop, operator_paused))
        watcher.add_done_callback(lambda _: response.close())
        try:
            buffer = b""
            chunks = response.content.iter_any().__aiter__()
            while True:
                try:
                    async with asyncio.timeout(inactivity):
                        chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    logger.debug(f"The watch-stream of {resource} was inactive for {inactivity}s; restarting.")
                    break
                except STREAM_ERRORS as e:
                    if not watcher.done():
                        logger.debug(f"The watch-stream of {resource} was broken: {e!r}")
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    # The waiter closes the stream a moment after a pause or stop begins: what arrives meanwhile
                    # is not the operator's to see now (it comes again after resuming, from the last version).
                    if _must_stop(stop, operator_paused):
                        return
                    event = _parse_line(line, resource=resource, logger=logger)
                    if event is not None:
                        yield event, line
            if buffer.strip() and not watcher.done() and not _must_stop(stop, operator_paused):
                # A well-formed last line without the trailing newline is still an event;
                # a truncated one is dropped: it will be re-delivered after resuming.
                event = _parse_line(buffer, resource=resource, logger=logger, tail=True)
                if event is not None:
                    yield event, buffer
        finally:
            # Wait for the interruption waiter to end, but never swallow a cancellation of our own task that comes
            # meanwhile (suppressing CancelledError around `await watcher` would: the watching would go on forever).
            watcher.cancel()
            await asyncio.wait([watcher])


def _parse_line(
    line: bytes,
    *,
    resource: Resource,
    logger: api.Logger,
    tail: bool = False,
) -> dict[str, Any] | None:
    line = line.strip()
    if not line:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        what = "truncated" if tail else "malformed"
        logger.error(f"Skipping a {what} watch-event of {resource}: {line[:200]!r}")
        return None
    if (
        not isinstance(event, dict)
        or not isinstance(event.get("type"), str)
        or not isinstance(event.get("object"), dict)
    ):
        logger.error(f"Skipping an unexpected watch-event of {resource}: {line[:200]!r}")
        return None
    if event["type"] == "ERROR":
        status = errors.parse_status(event["object"])
        code = (status or {}).get("code") or 500
        error = errors.make_error(code, status)
        if isinstance(error, errors.APIGoneError):
            raise error
        raise WatchStreamError(error)
    return event


def _selectors(
    resource: Resource,
    settings: OperatorSettings,
    label_selector: fetching.LabelSelector | None,
    field_selector: str | None,
    logger: api.Logger,
) -> tuple[fetching.LabelSelector | None, str | None]:
    """The explicit selectors, else those of ``settings.watching.{label,field}_selectors`` for this resource."""
    watching = settings.watching
    names = [resource.plural, resource.singular, resource.kind, *sorted(resource.shortcuts)]
    if label_selector is None:
        label_selector = watching.label_selectors.lookup(group=resource.group, names=names)
    if field_selector is None:
        field_selector = watching.field_selectors.lookup(group=resource.group, names=names)
    if watching.shard_selectors.lookup(group=resource.group, names=names) is not None:
        logger.warning(f"settings.watching.shard_selectors are not supported; ignored for {resource}.")
    if watching.initial_streaming:
        logger.warning(f"settings.watching.initial_streaming is not supported; {resource} is listed instead.")
    return label_selector, field_selector


async def continuous_watch(
    *,
    resource: Resource,
    namespace: str | None,
    settings: OperatorSettings,
    label_selector: fetching.LabelSelector | None = None,
    field_selector: str | None = None,
    stop: asyncio.Event | None = None,
    operator_paused: PauseFlag | None = None,
    markers: bool = False,
    state: WatchState | None = None,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> AsyncGenerator[RawEvent | Bookmark, None]:
    """
    List and watch until stopped (or paused, if the pause flag is given); see the module's docs.

    The ``state`` can be passed to continue from a previous (paused) watch with no re-listing.
    """
    logger = logger if logger is not None else default_logger
    state = state if state is not None else WatchState()
    needs_listing = state.resource_version is None
    label_selector, field_selector = _selectors(resource, settings, label_selector, field_selector, logger)
    chunk_size = settings.watching.chunk_size or fetching.DEFAULT_CHUNK_SIZE
    while not _must_stop(stop, operator_paused):
        if needs_listing:
            listing: dict[str, Any] = dict(
                resource=resource,
                namespace=namespace,
                settings=settings,
                label_selector=label_selector,
                field_selector=field_selector,
                chunk_size=chunk_size,
                logger=logger,
                vault=vault,
            )
            rv = ""
            if not state.listed or state.relist_all:  # the objects go to work chunk by chunk, as the chunks come
                everything, state.relist_all = state.relist_all, False
                if not everything:
                    state.known = {}
                present: set[str] | None = None  # the objects listed again (if some were seen before)
                pages = fetching.list_pages(**listing)
                async with contextlib.aclosing(pages):
                    async for page in pages:
                        if page.first and state.known:
                            present = set()
                        for item in page.items:
                            if present is not None and (uid := _uid(item)) is not None:
                                present.add(uid)
                            if state.remember(None, item) or everything:
                                yield RawEvent(type=None, object=item)
                            del item  # the listed bodies are the workers' now: not kept by this watch
                        rv = page.resource_version if page.resource_version is not None else rv
                        del page
                for event in _gone(state, present) if present is not None else []:
                    yield event
            else:  # a re-listing: the differences from what was seen, once all is listed
                items, rv = await fetching.list_objs(**listing)
                for event in _differences(state, items):
                    yield event
                del items
            state.resource_version = rv or None
            if not state.listed:
                state.listed = True
                if markers:
                    yield Bookmark.LISTED
            needs_listing = False

        try:
            async for raw_event, line in streaming_watch(
                resource=resource,
                namespace=namespace,
                settings=settings,
                resource_version=state.resource_version,
                label_selector=label_selector,
                field_selector=field_selector,
                stop=stop,
                operator_paused=operator_paused,
                logger=logger,
                vault=vault,
            ):
                event_type = raw_event["type"]
                body = raw_event["object"]
                event_rv = _rv(body)
                if event_type == "BOOKMARK":
                    state.resource_version = event_rv or state.resource_version
                    continue
                if event_type not in ("ADDED", "MODIFIED", "DELETED"):
                    logger.warning(f"Ignoring an unknown watch-event type {event_type!r} of {resource}.")
                    continue
                if event_rv is not None:
                    state.resource_version = event_rv
                if state.remember(event_type, body, line):
                    yield RawEvent(type=event_type, object=body)
        except errors.APIGoneError:
            logger.debug(f"The resource version of {resource} has expired; re-listing.")
            needs_listing = True
        except STREAM_ERRORS as e:
            logger.debug(f"The watch-stream of {resource} has failed: {e!r}; reconnecting.")
        except WatchStreamError as e:
            logger.warning(f"The watch-stream of {resource} has reported an error: {e}; reconnecting.")
        await _sleep_unless(settings.watching.reconnect_backoff, stop, operator_paused)


def _differences(state: WatchState, items: list[RawBody]) -> list[RawEvent]:
    """The events of a re-listing: what has changed since the objects were seen (all found before any goes).

    The new and changed objects come as listed (the type ``None``), as the published Kopf yields the objects of
    every listing, a re-listing after a 410 included (measured: in-stream 410, then every object with ``None``);
    the unchanged ones not at all (no duplicates); the gone ones as ``DELETED``.
    """
    events: list[RawEvent] = []
    present: set[str] = set()
    for item in items:
        uid = _uid(item)
        if uid is not None:
            present.add(uid)
        previous = state.known.get(uid) if uid is not None else None
        if previous is None or previous[0] != _rv(item):
            state.remember(None, item)
            events.append(RawEvent(type=None, object=item))
    events.extend(_gone(state, present))
    return events


def _gone(state: WatchState, present: set[str]) -> list[RawEvent]:
    """The DELETED events of the objects seen before but not present in a listing (the last seen bodies)."""
    return [RawEvent(type="DELETED", object=state.forget(key)) for key in list(state.known) if key not in present]


async def infinite_watch(
    *,
    resource: Resource,
    namespace: str | None,
    settings: OperatorSettings,
    label_selector: fetching.LabelSelector | None = None,
    field_selector: str | None = None,
    stop: asyncio.Event | None = None,
    operator_paused: PauseFlag | None = None,
    markers: bool = False,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
    whole_bodies: bool = True,
) -> AsyncGenerator[RawEvent | Bookmark, None]:
    """
    Watch forever (until ``stop`` is set): pause the streaming while the operator is paused.

    While paused, no events are yielded and no streams are open; on resume, everything is listed
    anew, and every object comes again as listed (changed or not: the pause has stopped their daemons
    and timers, which start again with it), and the objects gone meanwhile as deleted.
    ``whole_bodies``: see :class:`WatchState`.
    """
    logger = logger if logger is not None else default_logger
    state = WatchState(whole_bodies=whole_bodies)
    while stop is None or not stop.is_set():
        if operator_paused is not None and operator_paused.is_on():
            logger.debug(f"Pausing the watching of {resource}.")
            waiter = asyncio.create_task(operator_paused.wait_for(False))
            stopper = asyncio.create_task(stop.wait()) if stop is not None else None
            try:
                await asyncio.wait([t for t in (waiter, stopper) if t is not None], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (waiter, stopper):
                    if task is not None:
                        task.cancel()
            logger.debug(f"Resuming the watching of {resource}.")
            # As after the operator's start: every object once more, so that their daemons & timers start again.
            state.resource_version, state.relist_all = None, True
            continue
        stream = continuous_watch(
            resource=resource,
            namespace=namespace,
            settings=settings,
            label_selector=label_selector,
            field_selector=field_selector,
            stop=stop,
            operator_paused=operator_paused,
            markers=markers,
            state=state,
            logger=logger,
            vault=vault,
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                yield event
