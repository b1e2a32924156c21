"""The documentation works: the README starts with the two commands, links resolve, snippets run, the site builds."""

from __future__ import annotations

import importlib
import json
import pathlib
import pkgutil
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parent.parent
PAGES = sorted(path for path in (ROOT / "docs").rglob("*.md") if "_build" not in path.parts)
DOCS = [ROOT / "README.md", *PAGES]
PACKAGES = ("kopf", "kopf_sim", "pytest_kopf")

# The ```python blocks of all pages run in one interpreter (one start-up instead of one per page), each
# block in a fresh namespace and with a fresh default registry (so that the handlers of one block do not
# meet those of another); a block's own `if __name__ == "__main__":` part does not run. Fragments that are
# not programs are shown with ```{code-block} python instead, which is not executed.
SNIPPET_RUNNER = """
import json, sys, traceback
import kopf

failures = []
for page, blocks in json.loads(sys.stdin.read()).items():
    for index, block in enumerate(blocks):
        kopf.set_default_registry(kopf.OperatorRegistry())
        try:
            namespace = {"__name__": f"snippet_{index}", "__file__": page}
            exec(compile(block, f"<{page}: snippet {index}>", "exec"), namespace)
        except BaseException:
            failures.append(f"{page}, snippet {index}:\\n{block}\\n{traceback.format_exc()}")
print("\\n\\n".join(failures))
sys.exit(1 if failures else 0)
"""


def code_blocks(path: pathlib.Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(), flags=re.DOTALL)


def test_readme_starts_with_exactly_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert "kopf-sim serve" in commands[0] or "kopf run --sim" in commands[0]
    assert "pytest" in commands[1]
    assert text.index("```bash") < 100


def test_ci_runs_the_readmes_test_command() -> None:
    text = (ROOT / "README.md").read_text()
    test_command = text.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()[1]
    assert test_command in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("path", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve(path: pathlib.Path) -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", path.read_text()):
        if "://" not in target and not target.startswith("mailto:"):
            assert (path.parent / target).exists(), f"{path.name} links to a missing {target}"
            assert (path.parent / target).resolve().is_relative_to(ROOT), f"{path.name} links outside: {target}"


def test_pages_never_send_users_to_the_reference_seeds() -> None:
    for path in DOCS:
        text = path.read_text()
        assert "shared/seeds" not in text, f"{path.name} points outside the repository"
        assert "reference documentation" not in text, f"{path.name} names a documentation that users do not have"


def test_python_snippets_run() -> None:
    pages = {str(path.relative_to(ROOT)): code_blocks(path, "python") for path in DOCS}
    assert sum(len(blocks) for blocks in pages.values()) >= 40  # the framework's pages are full of them
    result = subprocess.run(
        [sys.executable, "-c", SNIPPET_RUNNER],
        input=json.dumps(pages),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"


def test_readme_first_command_runs_an_existing_operator_against_the_sim() -> None:
    text = (ROOT / "README.md").read_text()
    first_command = text.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()[0]
    assert "kopf run --sim" in first_command
    args = first_command.split("kopf run", 1)[1].split()
    files = [arg for arg in args if not arg.startswith("-")]
    assert any(name.endswith(".py") for name in files)
    assert any(name.endswith(".yaml") for name in files)
    for name in files:
        assert (ROOT / name).is_file(), f"the README's first command refers to a missing {name}"


# The site: Sphinx with warnings as errors and every cross-reference checked (the same as `tox -e docs`).
# One test builds it and checks the result (a fixture shared by several tests would build it once per
# xdist worker).


def public_modules(package: str) -> list[str]:
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


@pytest.mark.long_running
def test_the_site_builds_without_warnings_with_every_page_and_every_public_name(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "-n",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(tmp_path / ".doctrees"),
            str(ROOT / "docs"),
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"the docs do not build cleanly:\n{result.stderr}{result.stdout}"
    assert (tmp_path / "index.html").is_file()

    for page in PAGES:
        html = tmp_path / page.relative_to(ROOT / "docs").with_suffix(".html")
        assert html.is_file(), f"{page.relative_to(ROOT)} is not built (not in a toctree?)"

    anchors: set[str] = set()
    for html in (tmp_path / "reference").glob("*.html"):
        anchors |= set(re.findall(r'id="([^"]+)"', html.read_text()))
    missing = []
    for package in PACKAGES:
        for module_name in public_modules(package):
            if f"module-{module_name}" not in anchors:
                missing.append(module_name)
            module = importlib.import_module(module_name)
            for name in getattr(module, "__all__", ()):
                qualified = f"{module_name}.{name}"
                if qualified not in anchors and f"module-{qualified}" not in anchors:
                    missing.append(qualified)
    assert not missing, f"not in the API reference: {missing}"
