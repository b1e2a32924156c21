"""
Running a command line of the framework in a thread, alongside the tests: the body of ``kopf.testing``.

Threads, not processes: so that the exceptions (with their tracebacks) and the mocks work across
the test and the operator. The kit knows nothing of the command line itself (kits are below
``kopf.cli`` in the layers); the public face, :class:`kopf.testing.KopfRunner`, names the command
(``kopf.cli.main``) and the controls passed to it (``kopf.cli.CLIControls``).
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import logging
import threading
import types
from collections.abc import Callable
from typing import Any, ClassVar, Self

import click
import click.testing

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import loggers
from kopf._core.intents.registries import OperatorRegistry

__all__ = ["ThreadedCliRunner"]


class _AbstractKopfRunner(abc.ABC):
    """The context-manager protocol of the runners (for the type hints)."""

    @abc.abstractmethod
    def __enter__(self) -> _AbstractKopfRunner:
        """Start the operator in the background."""

    @abc.abstractmethod
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: types.TracebackType | None,
    ) -> bool | None:
        """Stop the operator and collect its outcome."""


class ThreadedCliRunner(_AbstractKopfRunner):
    """
    The command line invoked with Click's test runner in a thread of its own, until told to stop.

    The thread has an event loop of its own. Entering waits until the command's ``ready_flag``
    is set (its startup is over), or until it exits prematurely. Exiting sets its ``stop_flag``
    and waits for it to exit (at most ``timeout`` seconds if given); then the result is
    available: ``exit_code``, ``exception``, ``output``, etc. With ``reraise=True`` (the default),
    the command's exception is re-raised on exit. Subclasses name the command and its controls.
    """

    #: The click command to invoke (e.g. ``kopf.cli.main``).
    command: ClassVar[click.Command]
    #: What makes the command's controls (``obj=``) from the flags, the registry, the settings, the loop.
    controls: ClassVar[Callable[..., Any]]
    #: The subcommands that run until stopped (``None``: none is seen in the args); the others end by themselves,
    #: and exiting waits for them.
    stoppable: ClassVar[frozenset[str | None]] = frozenset({None})

    def __init__(
        self,
        *args: Any,
        reraise: bool = True,
        timeout: float | None = None,
        registry: OperatorRegistry | None = None,
        settings: OperatorSettings | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.args = args
        self.kwargs = kwargs
        self.reraise = reraise
        self.timeout = timeout
        self.registry = registry
        self.settings = settings
        self._stop: concurrent.futures.Future[bool] = concurrent.futures.Future()
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._future: concurrent.futures.Future[click.testing.Result] = concurrent.futures.Future()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._target, name="kopf-runner", daemon=True)
        self._thread.start()
        waited: list[concurrent.futures.Future[Any]] = [self._ready, self._future]
        concurrent.futures.wait(waited, timeout=self.timeout, return_when=concurrent.futures.FIRST_COMPLETED)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: types.TracebackType | None,
    ) -> None:
        if not self._stop.done() and self._subcommand() in self.stoppable:
            self._stop.set_result(True)  # logged as the published runner's: "Stop-flag is set to True."
        if self._thread is not None:
            self._thread.join(timeout=self.timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"The operator has not exited in {self.timeout} seconds.")
        if exc_val is None and self.reraise and self._future.done():
            exception = self.exception
            if exception is not None:  # incl. SystemExit of a usage error (exit code 2)
                raise exception

    def _subcommand(self) -> str | None:
        """The subcommand invoked, if it can be seen in the args (the first word that is not an option)."""
        args = self.args[0] if self.args else self.kwargs.get("args")
        tokens = args.split() if isinstance(args, str) else list(args or [])
        commands = [token for token in tokens if isinstance(token, str) and not token.startswith("-")]
        return commands[0] if commands else None

    def _target(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            controls = self.controls(
                ready_flag=self._ready,
                stop_flag=self._stop,
                registry=self.registry,
                settings=self.settings,
                loop=loop,
            )
            runner = click.testing.CliRunner()
            result = runner.invoke(self.command, *self.args, obj=controls, **self.kwargs)
        except BaseException as e:
            self._future.set_exception(e)
        else:
            self._future.set_result(result)
        finally:
            _forget_captured_log_streams()
            loop.close()

    @property
    def future(self) -> concurrent.futures.Future[click.testing.Result]:
        return self._future

    @property
    def output(self) -> str:
        return self._result().output

    @property
    def stdout(self) -> str:
        # As in the older Click with the mixed stderr (the default then): the logs are there too.
        return self._result().output

    @property
    def stdout_bytes(self) -> bytes:
        return self._result().output_bytes

    @property
    def stderr(self) -> str:
        return self._result().stderr

    @property
    def stderr_bytes(self) -> bytes:
        return self._result().stderr_bytes

    @property
    def exit_code(self) -> int:
        return self._result().exit_code

    @property
    def exception(self) -> BaseException:
        return self._result().exception  # type: ignore[return-value]

    @property
    def exc_info(self) -> tuple[type[BaseException], BaseException, types.TracebackType]:
        return self._result().exc_info  # type: ignore[return-value]

    def _result(self) -> click.testing.Result:
        if not self._future.done():
            raise RuntimeError("The operator is still running: the results are available after the exit.")
        return self._future.result()


def _forget_captured_log_streams() -> None:
    """Remove the logging handlers bound to the runner's captured (and now closed) streams."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, loggers._KopfStreamHandler):
            root.removeHandler(handler)
