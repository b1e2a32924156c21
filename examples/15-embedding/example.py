"""Embedding: an application runs the operator in a thread of its own, and starts and stops it.

``kopf run`` is not the only way: ``kopf.operator()`` is a coroutine that any application can run in an
event loop, e.g. in a thread next to its own work (a web app, a CLI, a scheduler). The application and
the operator meet at two flags (here ``threading.Event``; ``asyncio.Event`` and futures work too):

- ``ready_flag``: set by the operator once it has started up (its startup handlers have run);
- ``stop_flag``: set by the application to stop the operator gracefully (its cleanup handlers run).

As a program (``python examples/15-embedding/example.py``), it runs the operator in a thread until
Ctrl+C or SIGTERM, with the credentials of ``$KUBECONFIG``. With ``kopf run``, only the handlers below are used.
"""

import asyncio
import signal
import threading
from collections.abc import Collection
from typing import Any

import kopf


@kopf.on.create("kopfexamples")
def greet(name: str, **_: Any) -> dict[str, str]:
    return {"message": f"hello from the embedded operator, {name}"}


class OperatorThread:
    """The operator in a thread with its own event loop; ``start()`` waits until it is ready."""

    def __init__(self, *, namespaces: Collection[str] = (), registry: kopf.OperatorRegistry | None = None) -> None:
        self.namespaces = list(namespaces)
        self.registry = registry
        self.ready_flag = threading.Event()
        self.stop_flag = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kopf-operator", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(
                kopf.operator(
                    registry=self.registry,
                    standalone=True,
                    namespaces=self.namespaces,
                    clusterwide=not self.namespaces,
                    ready_flag=self.ready_flag,
                    stop_flag=self.stop_flag,
                )
            )
        except BaseException as exc:
            self.error = exc
            self.ready_flag.set()  # do not let start() wait for a dead operator
            raise

    def start(self, timeout: float = 60) -> None:
        self._thread.start()
        if not self.ready_flag.wait(timeout):
            raise TimeoutError(f"The operator has not started in {timeout} s.")
        if self.error is not None:
            raise RuntimeError("The operator has failed to start.") from self.error

    def stop(self, timeout: float = 60) -> None:
        self.stop_flag.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"The operator has not stopped in {timeout} s.")


def main() -> None:
    kopf.configure()  # the log format of `kopf run`
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    operator = OperatorThread()
    operator.start()
    try:
        while not stopping.wait(1):
            pass  # the application's own work would go here
    finally:
        operator.stop()


if __name__ == "__main__":
    main()
