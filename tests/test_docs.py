"""The documentation works: the README starts with the two commands, links resolve, snippets run."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


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


def test_relative_links_resolve() -> None:
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#]+)\)", path.read_text()):
            if "://" not in target:
                assert (path.parent / target).exists(), f"{path.name} links to a missing {target}"


def test_python_snippets_run(tmp_path: pathlib.Path) -> None:
    for path in DOCS:
        for index, block in enumerate(code_blocks(path, "python")):
            script = tmp_path / f"{path.stem}_{index}.py"
            script.write_text(block)
            result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, f"{path.name} snippet {index} failed:\n{result.stderr}"


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
