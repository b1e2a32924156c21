"""
The testing guide's examples pass as written: every ```python block of the guide's pages that defines a test
(``def test_`` or ``async def test_``) is written to a test file of its own, and one pytest session runs them
all under ``--kopf-sim`` from the repository's root (the examples name files such as ``examples/crd.yaml``
relative to it, as a user's tests name theirs relative to their project). Blocks without tests are run by
``tests/test_docs.py`` with the other pages' snippets.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from xml.etree import ElementTree

import pytest

ROOT = pathlib.Path(__file__).parent.parent
GUIDE = [ROOT / "docs" / "plugin.md", ROOT / "docs" / "migrating.md"]
TEST_FUNCTION = re.compile(r"^(?:async )?def (test_\w+)", re.MULTILINE)


def guide_tests() -> dict[str, str]:
    blocks: dict[str, str] = {}
    for page in GUIDE:
        for index, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.DOTALL)):
            if TEST_FUNCTION.search(block):
                blocks[f"test_{page.stem}_{index}.py"] = block
    return blocks


@pytest.mark.long_running
def test_the_guides_examples_pass_under_kopf_sim(tmp_path: pathlib.Path) -> None:
    blocks = guide_tests()
    assert len(blocks) >= 10  # the modes, each fixture, time, faults, crashes, checks, replay, migration
    for name, block in blocks.items():
        (tmp_path / name).write_text(block)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the repository's options (its testpaths)
    report = tmp_path / "report.xml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--kopf-sim",
            "-c",
            str(tmp_path / "pytest.ini"),
            "--rootdir",
            str(tmp_path),
            f"--junitxml={report}",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    expected = {match for block in blocks.values() for match in TEST_FUNCTION.findall(block)}
    passed = {
        case.get("name", "").split("[")[0] for case in ElementTree.parse(report).iter("testcase") if not list(case)
    }
    assert expected <= passed, f"not passed: {sorted(expected - passed)}"


# The pages' steps that need a cluster served over HTTP: `kopf-sim serve` stands for it.


def section(page: pathlib.Path, title: str) -> str:
    return page.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


@contextlib.contextmanager
def served_cluster(directory: pathlib.Path, *manifests: str) -> Iterator[pathlib.Path]:
    """``kopf-sim serve`` on 127.0.0.1 (a free port) until the block ends; its kubeconfig."""
    kubeconfig = directory / "kubeconfig"
    loads = [arg for manifest in manifests for arg in ("--load", manifest)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf_sim", "serve", "--kubeconfig", str(kubeconfig), *loads],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (kubeconfig.exists() and kubeconfig.stat().st_size) and proc.poll() is None:
            assert time.monotonic() < deadline, "kopf-sim serve has not started in 60 s"
            time.sleep(0.1)
        assert proc.poll() is None, "kopf-sim serve has exited"
        yield kubeconfig
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.long_running
def test_the_migrations_before_passes_against_a_served_cluster(tmp_path: pathlib.Path) -> None:
    page = ROOT / "docs" / "migrating.md"
    [before] = re.findall(
        r"```\{code-block\} python\n:caption: test_before.py\n\n(.*?)```", page.read_text(), flags=re.DOTALL
    )
    (tmp_path / "test_before.py").write_text(before)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    with served_cluster(tmp_path, "examples/crd.yaml") as kubeconfig:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-c",
                str(tmp_path / "pytest.ini"),
                "--rootdir",
                str(tmp_path),
                str(tmp_path / "test_before.py"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "1 passed" in result.stdout


@pytest.mark.long_running
def test_the_k3d_steps_pass_against_a_served_cluster(tmp_path: pathlib.Path) -> None:
    text = section(ROOT / "docs" / "plugin.md", "Running on k3d with `--kopf-real`")
    k3d, served = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    assert k3d.splitlines()[0].startswith("k3d cluster create") and "k3d kubeconfig write" in k3d
    # The steps from `kubectl get nodes` on are the same with either cluster.
    common = [line for line in k3d.splitlines() if not line.startswith(("k3d ", "export KUBECONFIG="))]
    assert common == [
        line for line in served.splitlines() if not line.startswith(("kopf-sim serve", "export KUBECONFIG=", "kill "))
    ]
    bindir = pathlib.Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    with served_cluster(tmp_path) as kubeconfig:
        for line in common:
            result = subprocess.run(
                line,
                shell=True,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
                env={**env, "KUBECONFIG": str(kubeconfig)},
            )
            assert result.returncode == 0, f"{line}:\n{result.stdout}\n{result.stderr}"
            if line.startswith("kubectl get nodes"):
                assert "Ready" in result.stdout
            if line.startswith("pytest"):
                assert " passed" in result.stdout and "failed" not in result.stdout
