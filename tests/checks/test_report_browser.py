"""A failure's report as a person sees it: opened in a real headless Chromium, with its styles and script.

The parser tests (test_reports.py) check what the file holds; these check what the browser makes of it: the script
runs without errors, the lanes and items are laid out and visible, the first divergence is painted in its own
colour, hovering an item shows its details, the jump link brings the divergence into view.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_kopf.strategies.steps import CrashAfterWrites, Create, PatchSpec
from tests.browser import Page, browser_page, executable

from .test_reports import GALLERY, RESOURCE, failed, gadget

CHROMIUM = executable()

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on this machine (CI installs Debian's chromium package; KOPF_TEST_CHROMIUM names another)",
)

#: What the page shows, read in the browser: lanes and items with their boxes, the colours of the rows.
LAYOUT = """(() => {
  const visible = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const lanes = [...document.querySelectorAll('table.timeline th.lane')];
  const items = [...document.querySelectorAll('table.timeline .item')];
  const probe = document.createElement('div');
  probe.style.background = 'var(--part)';
  document.body.appendChild(probe);
  const part = getComputedStyle(probe).backgroundColor;
  probe.remove();
  const parted = document.getElementById('first-divergence');
  const other = [...document.querySelectorAll('table.timeline tbody tr')].find((row) => row !== parted);
  return {
    scripted: !document.documentElement.classList.contains('noscript'),
    lanes: lanes.map((e) => e.dataset.lane),
    hidden_lanes: lanes.filter((e) => !visible(e)).map((e) => e.dataset.lane),
    items: items.length,
    hidden_items: items.filter((e) => !visible(e)).length,
    part: part,
    parted: parted ? getComputedStyle(parted.querySelector('td')).backgroundColor : null,
    parted_visible: parted ? visible(parted) : false,
    other: other ? getComputedStyle(other.querySelector('td')).backgroundColor : null,
  };
})()"""

IN_VIEW = """(() => {
  const r = document.getElementById('first-divergence').getBoundingClientRect();
  return r.bottom > 0 && r.top < window.innerHeight;
})()"""


def in_browser(path: Path, steps: Any) -> Any:
    """Open the page in a fresh browser and run ``steps(page)`` there (the browser is a real process: real time)."""
    assert CHROMIUM is not None
    url = path.resolve().as_uri()

    async def run() -> Any:
        async with browser_page(CHROMIUM) as page:
            await page.open(url)
            result = await steps(page)
            assert page.errors == [], f"the page's script failed: {page.errors}"
            return result

    return asyncio.run(run())


def test_the_browser_shows_the_worlds_lanes_and_paints_where_they_part(tmp_path: Path) -> None:
    failure = failed("crash_child_bug", "crash-restart", [CrashAfterWrites(1), Create(gadget(size=1))])
    assert failure.report

    async def look(page: Page) -> dict[str, Any]:
        layout: dict[str, Any] = await page.evaluate(LAYOUT)
        await page.hover("#first-divergence .item")
        layout["inspector"] = await page.evaluate("document.getElementById('inspector').textContent")
        await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        layout["in_view_before"] = await page.evaluate(IN_VIEW)
        await page.evaluate("document.querySelector('a.jump').click()")
        layout["in_view_after"] = await page.evaluate(IN_VIEW)
        if os.environ.get("KOPF_REPORT_SCREENSHOT"):  # the docs' picture: KOPF_REPORT_SCREENSHOT=path.png
            layout["screenshot"] = await page.screenshot()
        return layout

    layout = in_browser(Path(failure.report), look)
    if "screenshot" in layout:
        Path(os.environ["KOPF_REPORT_SCREENSHOT"]).write_bytes(layout.pop("screenshot"))
    assert layout["scripted"]
    lanes = layout["lanes"]
    checked, baseline = lanes[: lanes.index("user", 1)], lanes[lanes.index("user", 1) :]
    assert checked[:4] == ["user", "simulator", "operator #1", "operator #2"]
    assert sum(lane.startswith("configmaps default/obj-0-") for lane in checked) == 2  # the bug: a second child
    assert sum(lane.startswith("configmaps default/obj-0-") for lane in baseline) == 1
    assert layout["hidden_lanes"] == [] and layout["items"] > 10 and layout["hidden_items"] == 0

    # The first divergence is painted in the page's colour for it, unlike the other rows.
    assert layout["parted_visible"]
    assert layout["parted"] == layout["part"] != layout["other"]
    # Hovering the cut-off request shows its body and the handler that made it.
    assert "POST configmaps default/" in layout["inspector"]
    assert '"generateName": "obj-0-"' in layout["inspector"]
    assert "by the handler 'create_fn'" in layout["inspector"]
    # The header's link brings the divergence into view.
    assert layout["in_view_after"]


def test_the_browser_shows_one_world_and_a_failed_handlers_traceback(tmp_path: Path) -> None:
    steps = [Create(gadget(size=1)), PatchSpec(RESOURCE, "obj-0", {"size": None})]
    failure = failed("optional_field_bug", "convergence", steps)
    assert failure.report

    async def look(page: Page) -> dict[str, Any]:
        layout: dict[str, Any] = await page.evaluate(LAYOUT)
        await page.evaluate("document.querySelector('.item.k-handler.o-failed').classList.add('picked-by-test')")
        await page.hover(".item.picked-by-test")
        layout["inspector"] = await page.evaluate("document.getElementById('inspector').textContent")
        layout["runs"] = await page.evaluate("[...document.querySelectorAll('th.run')].map((e) => e.textContent)")
        return layout

    layout = in_browser(Path(failure.report), look)
    assert layout["scripted"] and layout["hidden_lanes"] == [] and layout["hidden_items"] == 0
    assert layout["runs"] == ["the checked world"]
    assert layout["parted"] is None  # nothing to compare: no divergence painted
    assert "update_fn failed with an exception" in layout["inspector"]
    assert "KeyError: 'size'" in layout["inspector"]
    assert str(GALLERY / "optional_field_bug.py") in layout["inspector"]
