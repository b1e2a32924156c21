"""What every failure's report must be: a file named in the message, well-formed, self-contained, small, with the
worlds' lanes and items, the steps, the reproduction; and no path of the machine but the user's files."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from pytest_kopf.errors import OperatorCheckFailed
from tests.pages import Element, external_references, items, label, parse_page

#: The largest report of a failure (acceptance: under 2 MB for a 20-step failure).
MAX_BYTES = 2_000_000


def checked_report(failure: OperatorCheckFailed, *, named: list[str | os.PathLike[str]]) -> Element:
    """The failure's report, parsed, after the checks that hold for every report; ``named``: the user's files."""
    assert failure.report, "the failure has no report"
    assert f"The report (a timeline of the run, open it in a browser): {failure.report}" in str(failure)
    path = Path(failure.report)
    assert path.is_file() and path.suffix == ".html"
    text = path.read_text(encoding="utf-8")
    assert len(text.encode()) < MAX_BYTES, f"the report has {len(text.encode()):,} bytes"
    root = parse_page(text)
    assert external_references(root) == []
    assert_no_machine_paths(text, named)

    assert root.find("title").text() == f"The check {failure.check!r} has failed"
    assert f"The check {failure.check!r} has failed" in root.by_id("failure").text()
    table = root.find("table", cls="timeline")
    runs = [head.text() for head in table.find_all("th", cls="run")]
    assert runs[0] == "the checked world"
    lanes = [head.attrs["data-lane"] for head in table.find_all("th", cls="lane")]
    assert "user" in lanes and "operator #1" in lanes
    actions = [label(item) for item in items(root, lambda item: item.attrs["data-lane"] == "user")]
    users = [step.code() for step in failure.steps if step.user]
    assert all(code in actions for code in users), (users, actions)  # in each world (one, or two)
    assert all(item.find("span", cls="details").text() for item in items(root, lambda i: "k-action" in i.classes))
    if failure.reproduction:
        button = root.by_id("reproduction").find("button", cls="copy")
        assert root.by_id(button.attrs["data-target"]).text() == scrubbed(failure.reproduction, named)
    return root


def scrubbed(text: str, named: list[str | os.PathLike[str]]) -> str:
    from pytest_kopf._report.location import PathScrubber

    return PathScrubber(named)(text)


def assert_no_machine_paths(text: str, named: list[str | os.PathLike[str]]) -> None:
    """No absolute path of this machine in the text but those of the user's files."""
    for path in sorted((os.path.abspath(os.fspath(p)) for p in named), key=len, reverse=True):
        text = text.replace(path, "")
    roots = {os.getcwd(), tempfile.gettempdir(), os.path.expanduser("~"), sys.prefix, str(Path(__file__).parents[2])}
    leaked = [root for root in roots if root in text]
    assert not leaked, f"machine paths in the report: {leaked}"
