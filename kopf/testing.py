"""
Helper tools to test the Kopf-based operators.

This module is a part of the framework's public interface; the runner's body is a kit
(:mod:`kopf._kits.runner`), which knows nothing of the command line: it is named here.
"""

from __future__ import annotations

from kopf import cli
from kopf._kits.runner import ThreadedCliRunner

__all__ = ["KopfRunner"]


class KopfRunner(ThreadedCliRunner):
    """
    A context manager to run a Kopf-based operator in parallel with the tests.

    The CLI (e.g. ``['run', '-A', 'operator.py']``) is invoked with Click's test runner
    in a thread of its own (with an event loop of its own). Entering waits until the
    operator is ready (its startup is over), or until it exits prematurely. Exiting stops
    the operator (via its stop-flag) and waits for it to exit (at most ``timeout`` seconds
    if given). Then, the result is available: ``exit_code``, ``exception``, ``output``, etc.
    With ``reraise=True`` (the default), the operator's exception is re-raised on exit.

    All other args & kwargs go to :meth:`click.testing.CliRunner.invoke`.
    Threads, not processes: so that the exceptions (with their tracebacks) and the mocks
    work across the test and the operator.

    Only ``run`` is stopped on exit: the other commands (``freeze``, ``resume``) end by
    themselves, and exiting waits for them to finish (as in the published framework), so
    ``with KopfRunner(['freeze', ...]): pass`` does freeze the operators.
    """

    command = cli.main
    controls = cli.CLIControls
    stoppable = frozenset({"run", None})
