"""Time as the operator's code sees it in sim mode: wall-clock reads, sleeps and sync waits follow the virtual clock.

While a sim-mode test runs (:func:`virtual_clocks`), these read the clock of the test's
virtual-time loop when called in that loop's thread or in one of its executor jobs (the
sync handlers, daemons and timers), and the real clock anywhere else (pytest itself, other
threads, real-time tests):

- ``time.time()``, ``time.time_ns()``, ``time.localtime()``/``gmtime()`` without arguments:
  the loop's epoch plus its time (the epoch of the simulated cluster's timestamps, too);
- ``time.monotonic()``, ``time.monotonic_ns()``: the loop's time (as ``loop.time()``, which is
  ``time.monotonic()`` in a regular loop);
- ``datetime.datetime.now(tz)``, ``utcnow()``, ``today()``, ``datetime.date.today()`` in the operator's
  code and the test's module (:func:`virtualize_module`): the same moment as ``time.time()``, so
  ``datetime.now(timezone.utc)`` compares with an object's ``creationTimestamp`` on one clock;
- ``time.sleep(t)`` in an executor job: an idle wait of ``t`` virtual seconds (the loop's clock
  jumps ahead when every job waits); in the loop's own thread (a blocking call in async code): the
  loop's clock moves on by ``t`` (its timers are late, as they would be), with no real waiting;
- kopf's sync waits (a sync daemon's ``stopped.wait(t)``): idle waits until the flag is set or
  ``t`` virtual seconds have passed (:func:`wait_event`, installed as kopf's pluggable waiter of
  :func:`kopf._kits.testing.set_sync_event_waiter` by :mod:`pytest_kopf.operator`; it waits for real elsewhere).

``time.perf_counter()`` and ``time.process_time()`` stay real: they measure the real cost of code.

The ``datetime`` classes are C types whose ``now()`` cannot be patched; code reaches them by name, through
the ``datetime`` module or the classes imported from it. Swapping ``datetime.datetime`` in the module for the
whole process (as freezegun does) breaks libraries that import during the test and look at the class itself
(e.g. pydantic models of the official client, built lazily on first use, refuse a class they do not know).
So only the names of the operator's modules (its files, the modules it imports from outside of the installed
libraries) and of the test's module are swapped: ``datetime`` for a copy of the module with virtual classes,
``datetime``/``date`` for the virtual classes, which pass ``isinstance()`` checks for the real ones and make
real instances. Libraries keep the real ``datetime``.

Why not freezegun: it freezes (or ticks) one moment for every thread of the process at once (pytest's
own timing and the other threads included), it patches ``perf_counter`` (which the virtual-time loop
needs real to detect stuck threads), it cannot follow a clock that jumps by itself (it moves only when
told), and its start scans every loaded module for references to the clock functions, which costs far
more than the plugin's whole per-test overhead (see ``benchmarks/bench_clocks.py``). Here, a start is a
dozen attribute assignments; the price is that modules which copied a clock function before the test
(``from time import time`` at their import) keep the real one -- the operator's own files and modules
are loaded during the test, so they see these.
"""

from __future__ import annotations

import asyncio.events
import contextlib
import datetime
import os
import sys
import sysconfig
import threading
import time
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kopf_sim.timing.virtualtime import TICKS_PER_SECOND, VirtualTimeLoop, job_loop

__all__ = ["VirtualDate", "VirtualDatetime", "virtual_clocks", "virtualize_module", "wait_event"]

_real_time = time.time
_real_time_ns = time.time_ns
_real_monotonic = time.monotonic
_real_monotonic_ns = time.monotonic_ns
_real_sleep = time.sleep
_real_localtime = time.localtime
_real_gmtime = time.gmtime
_RealDatetime = datetime.datetime
_RealDate = datetime.date


def current_loop() -> VirtualTimeLoop | None:
    """The virtual-time loop whose clock the current code follows: the loop running here, or the job's loop."""
    loop = asyncio.events._get_running_loop()
    if loop is not None:
        return loop if isinstance(loop, VirtualTimeLoop) else None
    return job_loop()


_NS_PER_TICK = 1_000_000_000 // TICKS_PER_SECOND


def _ns(loop: VirtualTimeLoop) -> int:
    """The loop's wall-clock time in nanoseconds since 1970 (its epoch plus its time)."""
    return loop.epoch_ns + loop.ticks * _NS_PER_TICK


def _time() -> float:
    loop = current_loop()
    return _real_time() if loop is None else _ns(loop) / 1e9


def _time_ns() -> int:
    loop = current_loop()
    return _real_time_ns() if loop is None else _ns(loop)


def _monotonic() -> float:
    loop = current_loop()
    return _real_monotonic() if loop is None else loop.time()


def _monotonic_ns() -> int:
    loop = current_loop()
    return _real_monotonic_ns() if loop is None else loop.ticks * _NS_PER_TICK


def _localtime(secs: float | None = None) -> time.struct_time:
    return _real_localtime(_time() if secs is None else secs)


def _gmtime(secs: float | None = None) -> time.struct_time:
    return _real_gmtime(_time() if secs is None else secs)


def _sleep(seconds: float) -> None:
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    running = asyncio.events._get_running_loop()
    if running is None:
        loop = job_loop()
        if loop is not None:
            loop.wait_in_thread(timeout=seconds)
            return
    elif isinstance(running, VirtualTimeLoop):
        running.block(seconds)
        return
    _real_sleep(seconds)


def wait_event(event: threading.Event, timeout: float | None) -> bool:
    """kopf's sync waits (``stopped.wait(t)``): idle in virtual time in a job of a virtual-time loop, else real."""
    loop = job_loop()
    if loop is None:
        return event.wait(timeout)
    return loop.wait_in_thread(timeout, event.is_set)


class _DatetimeMeta(type):
    """The virtual classes pass for the real ones in ``isinstance()`` & ``issubclass()`` checks."""

    _real: type

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._real)


class VirtualDatetime(_RealDatetime, metaclass=_DatetimeMeta):
    """``datetime.datetime`` during a sim-mode test: ``now()`` & co. follow the loop's clock; instances are real."""

    _real = _RealDatetime

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:  # the constructors (also fromisoformat() etc.) make real ones
        return _RealDatetime(*args, **kwargs)

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> Any:
        loop = current_loop()
        if loop is None:
            return _RealDatetime.now(tz)
        moment = loop.now()
        if tz is None:
            return moment.astimezone().replace(tzinfo=None)
        return tz.fromutc(moment.replace(tzinfo=tz))

    @classmethod
    def utcnow(cls) -> Any:
        loop = current_loop()
        return _RealDatetime.utcnow() if loop is None else loop.now().replace(tzinfo=None)

    @classmethod
    def today(cls) -> Any:
        return cls.now()


class VirtualDate(_RealDate, metaclass=_DatetimeMeta):
    """``datetime.date`` during a sim-mode test: ``today()`` follows the loop's clock; instances are real."""

    _real = _RealDate

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _RealDate(*args, **kwargs)

    @classmethod
    def today(cls) -> Any:
        return VirtualDatetime.now().date()


_PATCHES: list[tuple[Any, str, Any]] = [
    (time, "time", _time),
    (time, "time_ns", _time_ns),
    (time, "monotonic", _monotonic),
    (time, "monotonic_ns", _monotonic_ns),
    (time, "localtime", _localtime),
    (time, "gmtime", _gmtime),
    (time, "sleep", _sleep),
]
_installed = 0
_lock = threading.Lock()


@contextlib.contextmanager
def virtual_clocks() -> Iterator[None]:
    """Make the clocks of the code in virtual-time loops (and their jobs) virtual while in this context."""
    global _installed
    with _lock:
        _installed += 1
        if _installed == 1:
            for module, name, replacement in _PATCHES:
                setattr(module, name, replacement)
    try:
        yield
    finally:
        with _lock:
            _installed -= 1
            if _installed == 0:
                for module, name, _ in _PATCHES:
                    setattr(module, name, _ORIGINALS[(module.__name__, name)])


_ORIGINALS = {(module.__name__, name): getattr(module, name) for module, name, _ in _PATCHES}


class _DatetimeModule(types.ModuleType):
    """The ``datetime`` module as the operator's code sees it: the same, but with the virtual classes."""

    def __getattr__(self, name: str) -> Any:
        return getattr(datetime, name)


_DATETIME_MODULE = _DatetimeModule("datetime", datetime.__doc__)
_DATETIME_MODULE.datetime = VirtualDatetime  # type: ignore[attr-defined]
_DATETIME_MODULE.date = VirtualDate  # type: ignore[attr-defined]
_SWAPS: dict[int, Any] = {
    id(datetime): _DATETIME_MODULE,
    id(_RealDatetime): VirtualDatetime,
    id(_RealDate): VirtualDate,
    **{id(_ORIGINALS[("time", name)]): replacement for module, name, replacement in _PATCHES},
}


def virtualize_module(module: types.ModuleType) -> Callable[[], None]:
    """Swap the real clocks in a module's names (``import datetime``, ``from datetime import datetime``, ...).

    Returns the undo. The module's functions look their globals up at each call, so they see the swap.
    """
    namespace = module.__dict__
    swapped: list[tuple[str, Any]] = []
    for name, value in list(namespace.items()):
        replacement = _SWAPS.get(id(value))
        if replacement is not None and replacement is not value:
            namespace[name] = replacement
            swapped.append((name, value))

    def undo() -> None:
        for name, value in swapped:
            if namespace.get(name) is _SWAPS.get(id(value)):
                namespace[name] = value

    return undo


_OUR_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_LIBRARY_DIRS = tuple(
    os.path.normcase(os.path.realpath(path)) + os.sep
    for path in {
        *(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")),
        *(os.path.join(_OUR_ROOT, package) for package in ("kopf", "kopf_sim", "pytest_kopf")),
    }
)


def is_operator_code(module: types.ModuleType) -> bool:
    """Whether a module is the user's code (not the standard library, an installed library, or kopf's packages)."""
    path = getattr(module, "__file__", None)
    if not path:
        return False
    real = os.path.normcase(os.path.realpath(path))
    return not real.startswith(_LIBRARY_DIRS)


def is_operator_frame(frame: types.FrameType) -> bool:
    """Whether the code of a frame is the user's (its module's file, as :func:`is_operator_code` tells)."""
    module = sys.modules.get(frame.f_globals.get("__name__") or "")
    return module is not None and is_operator_code(module)


def virtualize_modules(modules: Iterable[types.ModuleType]) -> None:
    """Swap the clocks in the operator's modules (for the modules' whole life: they are the operator's)."""
    for module in modules:
        if is_operator_code(module):
            virtualize_module(module)
