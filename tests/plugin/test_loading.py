"""Loading the operator's files: compiled once per content, executed afresh in every test."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from pytest_kopf._loading import OperatorFileLoader


def load(path: Path, name: str) -> types.ModuleType:
    loader = OperatorFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_compiled_once_per_content_and_executed_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # no .pyc files: every load would compile the source
    path = tmp_path / "operator.py"
    path.write_text("import itertools\nCALLS = []\nCALLS.append(1)\nVALUE = 'first'\n")
    first, second = load(path, "op_1"), load(path, "op_2")
    assert first is not second and first.CALLS is not second.CALLS and second.CALLS == [1]
    code = OperatorFileLoader("op_3", str(path)).get_code("op_3")
    assert code is OperatorFileLoader("op_4", str(path)).get_code("op_4")  # compiled once

    path.write_text("VALUE = 'edited'\n")
    assert load(path, "op_5").VALUE == "edited"  # a new content is compiled anew
    assert OperatorFileLoader("op_6", str(path)).get_code("op_6") is not code
