"""The command line: option parsing into the running functions (with the running itself replaced)."""

from __future__ import annotations

import json
import os
import pathlib
import platform
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

import kopf
from kopf import cli
from kopf._cogs.helpers import loggers
from kopf._core.engines import peering
from kopf._core.reactor import running


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    recorded: list[dict[str, Any]] = []

    def fake_run(**kwargs: Any) -> None:
        command = kwargs.get("_command")
        if command is not None:
            command.close()
        recorded.append(kwargs)

    monkeypatch.setattr(running, "run", fake_run)
    return recorded


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    recorded: list[dict[str, Any]] = []
    monkeypatch.setattr(loggers, "configure", lambda **kwargs: recorded.append(kwargs))
    return recorded


@pytest.fixture
def operator_file(tmp_path: pathlib.Path, registry: kopf.OperatorRegistry) -> pathlib.Path:
    path = tmp_path / "my_operator.py"
    path.write_text("import kopf\n\n@kopf.on.create('kopfexamples')\ndef create_fn(**_):\n    pass\n")
    return path


def invoke(*args: str, controls: cli.CLIControls | None = None) -> Any:
    return CliRunner().invoke(cli.main, list(args), obj=controls, catch_exceptions=False)


def test_run_with_all_scope_peering_probing_options(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], operator_file: pathlib.Path
) -> None:
    registry = kopf.OperatorRegistry()
    result = invoke(
        "run",
        "-n",
        "ns1",
        "--namespace",
        "app-*,!app-skip",
        "--standalone",
        "--priority",
        "5",
        "--peering",
        "mypeering",
        "--liveness",
        "http://127.0.0.1:8080/healthz",
        str(operator_file),
        controls=cli.CLIControls(registry=registry),
    )
    assert result.exit_code == 0, result.output
    [call] = calls
    assert list(call["namespaces"]) == ["ns1", "app-*,!app-skip"]
    assert call["clusterwide"] is False
    assert call["standalone"] is True
    assert call["priority"] == 5
    assert call["peering_name"] == "mypeering"
    assert call["liveness_endpoint"] == "http://127.0.0.1:8080/healthz"
    assert call["registry"] is registry
    assert [handler.id for handler in registry.changing] == ["create_fn"]  # the file was imported into it.
    assert configured == [
        dict(
            debug=False, verbose=False, quiet=False, log_format=loggers.LogFormat.FULL, log_refkey=None, log_prefix=None
        )
    ]


def test_run_defaults(calls: list[dict[str, Any]], configured: list[dict[str, Any]]) -> None:
    assert invoke("run").exit_code == 0
    [call] = calls
    assert call["standalone"] is None and call["priority"] is None and call["peering_name"] is None
    assert call["clusterwide"] is False and list(call["namespaces"]) == []
    assert call["liveness_endpoint"] is None and call["vault"] is None


@pytest.mark.parametrize(
    ("args", "priority"),
    [
        (["--dev"], 666),
        (["--dev", "--priority", "10"], 10),
        (["--priority", "-3"], -3),
    ],
)
def test_dev_mode_and_priorities(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], args: list[str], priority: int
) -> None:
    assert invoke("run", *args).exit_code == 0
    assert calls[0]["priority"] == priority


def test_all_namespaces(calls: list[dict[str, Any]], configured: list[dict[str, Any]]) -> None:
    assert invoke("run", "-A").exit_code == 0
    assert calls[0]["clusterwide"] is True
    assert invoke("run", "--all-namespaces").exit_code == 0
    assert calls[1]["clusterwide"] is True


@pytest.mark.parametrize("args", [["-A", "-n", "ns1"], ["--all-namespaces", "--namespace=ns*"]])
def test_all_namespaces_and_namespaces_together_are_a_usage_error(calls: list[dict[str, Any]], args: list[str]) -> None:
    result = CliRunner().invoke(cli.main, ["run", "--standalone", *args])
    assert result.exit_code == 2
    assert "Error: Either --namespace or --all-namespaces can be used, not both." in result.output
    assert calls == []


def test_all_namespaces_and_namespaces_from_the_environment_are_a_usage_error(
    calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KOPF_RUN_NAMESPACE", "ns1")
    result = CliRunner().invoke(cli.main, ["run", "--standalone", "-A"])
    assert result.exit_code == 2 and "not both" in result.output
    assert calls == []


async def test_the_embedded_operator_is_either_clusterwide_or_namespaced() -> None:
    with pytest.raises(TypeError, match="either cluster-wide or namespaced, not both"):
        await kopf.spawn_tasks(clusterwide=True, namespaces=["ns1"], registry=kopf.OperatorRegistry())


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--verbose"], dict(verbose=True)),
        (["-v"], dict(verbose=True)),
        (["--debug"], dict(debug=True)),
        (["--quiet"], dict(quiet=True)),
        (["--log-format", "json"], dict(log_format=loggers.LogFormat.JSON)),
        (["--log-format=plain"], dict(log_format=loggers.LogFormat.PLAIN)),
        (["--log-format", "full"], dict(log_format=loggers.LogFormat.FULL)),
        (["--log-prefix"], dict(log_prefix=True)),
        (["--no-log-prefix"], dict(log_prefix=False)),
        (
            ["--log-format", "json", "--log-refkey", "k8s-obj"],
            dict(log_format=loggers.LogFormat.JSON, log_refkey="k8s-obj"),
        ),
    ],
)
def test_logging_options(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], args: list[str], expected: dict[str, Any]
) -> None:
    assert invoke("run", *args).exit_code == 0
    defaults = dict(
        debug=False, verbose=False, quiet=False, log_format=loggers.LogFormat.FULL, log_refkey=None, log_prefix=None
    )
    assert configured == [{**defaults, **expected}]


def test_unknown_log_format_is_a_usage_error(calls: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(cli.main, ["run", "--log-format", "xml"])
    assert result.exit_code == 2 and "xml" in result.output
    assert calls == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://x", "Only http:// liveness endpoints are supported"),
        ("https://0.0.0.0:8080/healthz", "Only http:// liveness endpoints are supported"),
        ("http://0.0.0.0:port/healthz", "invalid port"),
    ],
)
def test_bad_liveness_url_is_a_usage_error(calls: list[dict[str, Any]], url: str, message: str) -> None:
    result = CliRunner().invoke(cli.main, ["run", "--standalone", "-A", f"--liveness={url}"])
    assert result.exit_code == 2
    assert "Invalid value for '-L' / '--liveness'" in result.output and message in result.output
    assert "Traceback" not in result.output
    assert not calls  # the operator is not started


async def test_bad_liveness_url_fails_the_embedded_operator_before_it_starts() -> None:
    with pytest.raises(ValueError, match="Only http:// liveness endpoints"):
        await kopf.spawn_tasks(liveness_endpoint="ftp://x", clusterwide=True, registry=kopf.OperatorRegistry())


def test_log_format_param_type_accepts_the_enum() -> None:
    assert cli.LogFormatParamType().convert(loggers.LogFormat.JSON, None, None) is loggers.LogFormat.JSON
    assert cli.LogFormatParamType().convert("plain", None, None) is loggers.LogFormat.PLAIN


def test_modules_are_imported(
    calls: list[dict[str, Any]],
    configured: list[dict[str, Any]],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "handlers_mod_for_cli_test.py").write_text("LOADED = True\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert invoke("run", "-m", "handlers_mod_for_cli_test").exit_code == 0
    import handlers_mod_for_cli_test  # type: ignore[import-not-found]

    assert handlers_mod_for_cli_test.LOADED is True


@pytest.fixture
def import_state(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """The import path as it was, restored after the test; the names in the list are dropped from sys.modules.

    The operator does not run (``calls``) and the logging stays as it is (``configured``).
    """
    monkeypatch.setattr(sys, "path", list(sys.path))
    imported: list[str] = []
    yield imported
    for name in imported:
        sys.modules.pop(name, None)


def operator_with_a_sibling(directory: pathlib.Path, sibling: str) -> pathlib.Path:
    """An operator file importing a module next to it, as operators in the wild do (``from helpers import x``)."""
    directory.mkdir(parents=True)
    (directory / f"{sibling}.py").write_text(f"HANDLER_ID = {sibling!r}\n")
    path = directory / "operator.py"
    path.write_text(
        "import kopf\n"
        f"from {sibling} import HANDLER_ID\n\n"
        "@kopf.on.create('kopfexamples', id=HANDLER_ID)\n"
        "def create_fn(**_):\n"
        "    pass\n"
    )
    return path


@pytest.mark.parametrize("sim", [False, True], ids=["cluster", "sim"])
def test_files_import_their_sibling_modules_from_any_directory(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    import_state: list[str],
    sim: bool,
) -> None:
    import_state += ["helpers_for_cli_test_a", "helpers_for_cli_test_b"]
    first = operator_with_a_sibling(tmp_path / "first", "helpers_for_cli_test_a")
    second = operator_with_a_sibling(tmp_path / "second" / "nested", "helpers_for_cli_test_b")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    registry = kopf.OperatorRegistry()
    relative = os.path.relpath(second)  # a relative path works as well as an absolute one
    args = ["--sim", str(first), relative] if sim else [str(first), relative]
    result = invoke("run", "-n", "default", *args, controls=cli.CLIControls(registry=registry))
    assert result.exit_code == 0, result.output
    assert [handler.id for handler in registry.changing] == ["helpers_for_cli_test_a", "helpers_for_cli_test_b"]
    assert sys.path[:2] == [str(second.parent), str(first.parent)]  # each file's directory first, as python does


def test_a_file_directory_already_on_the_path_is_not_added_twice(
    tmp_path: pathlib.Path,
    import_state: list[str],
) -> None:
    import_state.append("helpers_for_cli_test_c")
    operator = operator_with_a_sibling(tmp_path / "op", "helpers_for_cli_test_c")
    sys.path.insert(0, str(operator.parent))
    assert invoke("run", str(operator), str(operator)).exit_code == 0
    assert sys.path.count(str(operator.parent)) == 1


def test_modules_in_packages_of_the_current_directory_are_imported(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    import_state: list[str],
) -> None:
    import_state += ["pkg_for_cli_test", "pkg_for_cli_test.helpers", "pkg_for_cli_test.operator"]
    package = tmp_path / "pkg_for_cli_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("HANDLER_ID = 'from-the-package'\n")
    (package / "operator.py").write_text(
        "import kopf\n"
        "from pkg_for_cli_test.helpers import HANDLER_ID\n\n"
        "@kopf.on.create('kopfexamples', id=HANDLER_ID)\n"
        "def create_fn(**_):\n"
        "    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    registry = kopf.OperatorRegistry()
    result = invoke("run", "-m", "pkg_for_cli_test.operator", controls=cli.CLIControls(registry=registry))
    assert result.exit_code == 0, result.output
    assert [handler.id for handler in registry.changing] == ["from-the-package"]


def test_missing_file_is_an_error(calls: list[dict[str, Any]], configured: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(cli.main, ["run", "/nonexistent/operator.py"])
    assert result.exit_code != 0 and "No such file" in result.output
    assert calls == []


def test_namespaces_from_the_environment(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KOPF_RUN_NAMESPACE", "ns1 ns2")
    assert invoke("run", "-n", "ns0").exit_code == 0
    assert list(calls[0]["namespaces"]) == ["ns0", "ns1", "ns2"]


def test_sim_with_manifests_serves_a_cluster_and_prints_the_kubeconfig(
    configured: list[dict[str, Any]], operator_file: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run(**kwargs: Any) -> None:  # while the operator "runs", the cluster is served.
        [key] = kwargs["vault"].keys()
        server = kwargs["vault"].get(key).server
        with urllib.request.urlopen(f"{server}/apis/kopf.dev/v1", timeout=5) as response:
            resources = json.load(response)["resources"]
        calls.append(dict(kwargs, server=server, plurals=[resource["name"] for resource in resources]))

    monkeypatch.setattr(running, "run", fake_run)
    crd = pathlib.Path(__file__).parent.parent.parent.parent / "examples" / "crd.yaml"
    result = invoke("run", "--sim", str(crd), str(operator_file))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("Simulated cluster: http://127.0.0.1:")
    assert lines[1].startswith("Kubeconfig: ")
    url = lines[0].split(": ", 1)[1]
    kubeconfig = lines[1].split(": ", 1)[1]
    [call] = calls
    assert call["server"] == url
    assert "kopfexamples" in call["plurals"]
    assert call["clusterwide"] is True  # no namespaces given: the whole simulated cluster.
    assert not os.path.exists(kubeconfig)  # removed after the operator has exited.


def test_sim_alone_takes_no_manifest_from_python_files(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], operator_file: pathlib.Path
) -> None:
    registry = kopf.OperatorRegistry()
    result = invoke("run", "-n", "default", "--sim", str(operator_file), controls=cli.CLIControls(registry=registry))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Simulated cluster: ")
    assert [handler.id for handler in registry.changing] == ["create_fn"]
    assert calls[0]["clusterwide"] is False and list(calls[0]["namespaces"]) == ["default"]


def test_sim_with_a_broken_manifest_fails(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], tmp_path: pathlib.Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("- just\n- a list\n")
    result = CliRunner().invoke(cli.main, ["run", "--sim", str(broken)])
    assert result.exit_code != 0
    assert calls == []


def test_freeze_and_resume(
    calls: list[dict[str, Any]], configured: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[tuple[str, dict[str, Any]]] = []

    async def fake_freeze(**kwargs: Any) -> None:
        pass

    async def fake_resume(**kwargs: Any) -> None:
        pass

    monkeypatch.setattr(peering, "freeze", lambda **kw: (commands.append(("freeze", kw)), fake_freeze())[1])
    monkeypatch.setattr(peering, "resume", lambda **kw: (commands.append(("resume", kw)), fake_resume())[1])

    assert (
        invoke(
            "freeze",
            "--lifetime",
            "60",
            "-m",
            "maintenance",
            "-n",
            "ns1",
            "--priority",
            "200",
            "--id",
            "me@host",
            "--peering",
            "example",
        ).exit_code
        == 0
    )
    assert invoke("resume", "-A", "--id", "me@host").exit_code == 0
    (name1, kw1), (name2, kw2) = commands
    assert name1 == "freeze" and kw1["lifetime"] == 60 and kw1["message"] == "maintenance"
    assert list(kw1["namespaces"]) == ["ns1"] and kw1["clusterwide"] is False
    assert kw1["priority"] == 200 and kw1["identity"] == "me@host" and kw1["peering_name"] == "example"
    assert name2 == "resume" and kw2["clusterwide"] is True and kw2["peering_name"] == "default"
    assert all(call["_command"] is not None and call["standalone"] is True for call in calls)


def test_freeze_requires_the_lifetime(calls: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(cli.main, ["freeze"])
    assert result.exit_code == 2 and "--lifetime" in result.output


GC_PROBE = """
import gc, sys
from click.testing import CliRunner
from kopf import cli
from kopf._core.reactor import running
if sys.argv[1] != "default":
    gc.set_threshold(int(sys.argv[1]), 10, 10)
seen = []
running.run = lambda **_: seen.append(f"{gc.get_threshold()[0]} {gc.get_freeze_count() > 0}")
result = CliRunner().invoke(cli.main, ["run", "--standalone", sys.argv[2]])
assert result.exit_code == 0, result.output
print(*seen)
"""


@pytest.mark.parametrize(
    ("thresholds", "expected"),
    [("default", f"{cli.GC_YOUNG_THRESHOLD} True"), ("5000", "5000 False")],
)
def test_run_tunes_the_garbage_collector_unless_tuned_already(
    tmp_path: pathlib.Path, thresholds: str, expected: str
) -> None:
    operator = tmp_path / "operator.py"
    operator.write_text("import kopf\n")
    result = subprocess.run(
        [sys.executable, "-c", GC_PROBE, thresholds, str(operator)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


MALLOC_PROBE = """
import ctypes, socket, sys

class MallInfo2(ctypes.Structure):  # glibc's struct mallinfo2: ten size_t fields; hblks is the 4th.
    _fields_ = [(name, ctypes.c_size_t) for name in "arena ordblks smblks hblks hblkhd a b c d e".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2

def mapped_blocks_while_reading():
    # As asyncio reads a socket: into a 256 KiB buffer, shrunk to the 100 bytes received.
    sender, receiver = socket.socketpair()
    sender.send(b"x" * 100)
    before = libc.mallinfo2().hblks
    data = receiver.recv(256 * 1024)
    return libc.mallinfo2().hblks - before

seen = [mapped_blocks_while_reading()]  # at the interpreter's start: glibc's initial threshold
from click.testing import CliRunner
from kopf import cli
from kopf._core.reactor import running
running.run = lambda **_: seen.append(mapped_blocks_while_reading())
result = CliRunner().invoke(cli.main, ["run", "--standalone", sys.argv[1]])
assert result.exit_code == 0, result.output
print(*seen)
"""


def _glibc_version() -> tuple[int, ...]:
    libc, version = platform.libc_ver()
    return tuple(int(part) for part in version.split(".") if part.isdigit()) if libc == "glibc" else ()


@pytest.mark.skipif(_glibc_version() < (2, 33), reason="glibc's malloc, with mallinfo2() (2.33+)")
def test_run_reads_sockets_into_the_heap_not_into_mapped_memory(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "operator.py"
    operator.write_text("import kopf\n")
    # As installed: the bytecode cached (a module compiled at its import frees blocks that raise the threshold).
    env = {key: val for key, val in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", "import kopf.cli"], env=env, check=True, timeout=60)
    result = subprocess.run(
        [sys.executable, "-c", MALLOC_PROBE, str(operator)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 0"  # at the start: a mapped block per read; in `kopf run`: none
