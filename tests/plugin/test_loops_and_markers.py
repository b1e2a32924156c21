"""The test loop (virtual or real time), the markers, the options, and serving the sim to subprocesses."""

from __future__ import annotations

import gc
import shutil
import textwrap

import pytest

from .conftest import BASE, CONFIGS, NO_ASYNCIO

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

LOOP_TESTS = f'''
import asyncio
import json
import pytest
from kopf_sim.timing import virtualtime
from pytest_kopf.errors import KopfModeError

async def test_virtual_time_by_default(kopf_cluster):
    loop = asyncio.get_running_loop()
    assert isinstance(loop, virtualtime.VirtualTimeLoop)
    await asyncio.sleep(86400 * 365)
    assert loop.time() == 86400 * 365
    with pytest.raises(KopfModeError, match="mark the test with @pytest.mark.kopf_real_time"):
        await kopf_cluster.kubeconfig()

@pytest.mark.kopf_real_time
async def test_real_time_when_marked(kopf_cluster):
    loop = asyncio.get_running_loop()
    assert not isinstance(loop, virtualtime.VirtualTimeLoop)
    with pytest.raises(KopfModeError, match="needs virtual time"):
        await kopf_cluster.sim.advance(1)
    await kopf_cluster.create({{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "cm"}},
                                "data": {{"k": "v"}}}})
    path = await kopf_cluster.kubeconfig()
    assert path == await kopf_cluster.kubeconfig()
    process = await asyncio.create_subprocess_exec(
        "{KUBECTL}", "--kubeconfig", str(path), "--request-timeout=30s", "get", "configmap", "cm", "-o", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(60):
        stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr
    assert json.loads(stdout)["data"] == {{"k": "v"}}
    process = await asyncio.create_subprocess_exec(
        "{KUBECTL}", "--kubeconfig", str(path), "--request-timeout=30s", "create", "configmap", "cm2",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(60):
        await process.communicate()
    assert (await kopf_cluster.get("configmaps", "cm2"))["metadata"]["name"] == "cm2"

@pytest.mark.kopf_real_only
async def test_real_only(kopf_cluster):
    raise AssertionError("must not run")

@pytest.mark.kopf_sim_only
async def test_sim_only(kopf_cluster):
    assert kopf_cluster.mode == "sim"

def test_loop_fixture_for_sync_code(kopf_loop):
    async def answer():
        await asyncio.sleep(10)
        return 42
    assert kopf_loop.virtual
    assert kopf_loop.run(answer()) == 42
    assert kopf_loop.loop.time() == 10

async def test_not_a_kopf_test():
    pass
'''


@pytest.mark.parametrize("config", ["no-asyncio", "asyncio-auto"])
def test_loops_and_markers(pytester: pytest.Pytester, config: str) -> None:
    args, ini = CONFIGS[config]
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makepyfile(test_loops=LOOP_TESTS)
    result = pytester.runpytest_inprocess(*args, *BASE, "-rs")
    if config == "no-asyncio":  # an async test with no kopf fixtures: nobody runs it, pytest fails it
        result.assert_outcomes(passed=4, skipped=1, failed=1)
        result.stdout.fnmatch_lines(["*test_not_a_kopf_test*", "async def functions are not natively supported*"])
    else:  # pytest-asyncio runs it
        result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*kopf_real_only: runs only with --kopf-real (this run uses --kopf-sim)"])


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.kopf_sim_only: *", "@pytest.mark.kopf_real_only: *", "@pytest.mark.kopf_real_time: *"]
    )
    pytester.makepyfile(
        textwrap.dedent("""
        import pytest
        @pytest.mark.kopf_real_time
        def test_strict(): pass
    """)
    )
    pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--strict-markers").assert_outcomes(passed=1)


def test_invalid_mode_in_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkopf_mode = imaginary\n")
    pytester.makepyfile("def test_it(): pass\n")
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.stderr.fnmatch_lines(["*kopf_mode must be 'sim' or 'real', got 'imaginary'*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["-o", "kopf_time_limit=-5"], "kopf_time_limit must be a positive number of seconds, got '-5'."),
        (["-o", "kopf_time_limit=0"], "kopf_time_limit must be a positive number of seconds, got '0'."),
        (["-o", "kopf_time_limit=soon"], "kopf_time_limit must be a positive number of seconds, got 'soon'."),
        (
            ["-o", "kopf_thread_timeout=-1"],
            "kopf_thread_timeout must be a positive number of seconds or 'none', got '-1'.",
        ),
        (["--kopf-sim", "--kopf-real"], "--kopf-sim and --kopf-real cannot be given together: choose one mode."),
        (["--kopf-real", "--kopf-sim"], "--kopf-sim and --kopf-real cannot be given together: choose one mode."),
        (["-o", "kopf_gc_freeze=maybe"], "kopf_gc_freeze must be true or false (or yes/no, on/off, 1/0), got 'maybe'."),
        (["-o", "kopf_reuse_threads=2"], "kopf_reuse_threads must be true or false (or yes/no, on/off, 1/0), got '2'."),
    ],
)
def test_wrong_options_are_usage_errors_naming_the_option(
    pytester: pytest.Pytester, args: list[str], error: str
) -> None:
    """Not every test failing (a time limit of -5 s), the last flag silently winning, or "invalid truth value"."""
    pytester.makepyfile("def test_it(kopf_cluster): pass\n")
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {error}" in result.stderr.lines


def test_kopf_record_into_a_file_is_a_usage_error_at_once(pytester: pytest.Pytester) -> None:
    """Not a FileExistsError in the set-up of every test: the option takes a directory."""
    pytester.makepyfile("def test_it(kopf_cluster): pass\n")
    pytester.path.joinpath("taken").write_text("")
    for where, error in [("taken", "is a file"), ("taken/logs", f"is under a file ({pytester.path / 'taken'})")]:
        result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-record", where)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"ERROR: --kopf-record takes a directory (one log per test), but {where} {error}." in result.stderr.lines


@pytest.mark.parametrize(("ini", "frozen"), [("", True), ("kopf_gc_freeze = false\n", False)])
def test_gc_freeze_after_the_collection(pytester: pytest.Pytester, ini: str, frozen: bool) -> None:
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makeconftest(
        textwrap.dedent("""
        import gc
        before = []
        def pytest_collection_modifyitems(items):
            before.append((gc.get_freeze_count(), gc.get_threshold()))
    """)
    )
    # (Compared with the state before the inner session: the outer one may have tuned the collector already.)
    pytester.makepyfile(
        textwrap.dedent(f"""
        import gc
        from conftest import before
        async def test_kopf(kopf_cluster):
            frozen_count, thresholds = before[0]
            assert (gc.get_freeze_count() > frozen_count) is {frozen}
            assert gc.get_threshold()[0] >= 7000 if {frozen} else gc.get_threshold() == thresholds
    """)
    )
    thresholds = gc.get_threshold()
    # The interpreter's default, whatever this (outer) session has set: it raises the threshold too
    # when it runs kopf tests itself (the examples' tests, in the whole suite).
    inner_thresholds = (700, *thresholds[1:])
    gc.set_threshold(*inner_thresholds)
    try:
        pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE).assert_outcomes(passed=1)
        assert gc.get_threshold() == inner_thresholds  # restored when the session finishes
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_time_limit_of_virtual_time(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkopf_time_limit = 100\n")
    pytester.makepyfile(
        textwrap.dedent("""
        import asyncio
        async def test_forever(kopf_cluster):
            while True:
                await asyncio.sleep(10)
    """)
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TimeLimitError: The loop time would pass its limit of 100.0 s*"])


def test_explicit_asyncio_marker_still_runs_in_the_kopf_loop(pytester: pytest.Pytester) -> None:
    args, ini = CONFIGS["asyncio-strict"]
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makepyfile(
        textwrap.dedent("""
        import asyncio, pytest
        from kopf_sim.timing import virtualtime

        @pytest.mark.asyncio
        async def test_marked(kopf_cluster):
            assert isinstance(asyncio.get_running_loop(), virtualtime.VirtualTimeLoop)
            await kopf_cluster.sim.advance(60)
            assert asyncio.get_running_loop().time() == 60

        @pytest.mark.asyncio
        async def test_plain_asyncio():
            assert not isinstance(asyncio.get_running_loop(), virtualtime.VirtualTimeLoop)
    """)
    )
    pytester.runpytest_inprocess(*args, *BASE).assert_outcomes(passed=2)
