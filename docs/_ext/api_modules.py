"""
``api-modules``: the API reference of a package, one ``automodule`` per public module, found at build time.

Modules that are added to a package later appear in the reference without editing the pages::

    ```{api-modules} kopf_sim
    :exclude: kopf_sim.cli
    ```

A module is public when no part of its dotted name starts with an underscore. Each module is documented
with its members: those in its ``__all__``, or else the public ones defined in it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective


def public_modules(package: str) -> list[str]:
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), prefix=f"{package}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def undocumented_data(module_name: str) -> list[str]:
    """
    The public data of a module (constants, type aliases) that autodoc would leave out for lack of a doc comment.

    Autodoc documents the classes and functions of a module by themselves, but its variables only when they
    have a ``#:`` comment; so the rest of those in ``__all__`` (or, without it, those assigned in the module)
    are documented explicitly, to have every public name in the reference.
    """
    module = importlib.import_module(module_name)
    analyzer = ModuleAnalyzer.for_module(module_name)
    documented = {name for scope, name in analyzer.find_attr_docs() if not scope}
    names: list[str] | None = getattr(module, "__all__", None)
    if names is None:
        tree = ast.parse(inspect.getsource(module))
        names = []
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign) and node.value is not None
                else []
            )
            names += [target.id for target in targets if isinstance(target, ast.Name)]
        names = [name for name in names if not name.startswith("_")]
    result = []
    for name in names:
        value = getattr(module, name, None)
        if name in documented or inspect.isclass(value) or inspect.isroutine(value):
            continue
        if inspect.ismodule(value) and value.__name__ == f"{module_name}.{name}":
            continue  # a public submodule: documented by itself
        result.append(name)
    return result


class ApiModules(SphinxDirective):
    required_arguments = 1
    option_spec = {"exclude": lambda text: text.split()}

    def run(self) -> list[nodes.Node]:
        excluded = set(self.options.get("exclude", ()))
        lines: list[str] = []
        for name in public_modules(self.arguments[0]):
            if name in excluded:
                continue
            lines += [f"## `{name}`", "", "```{eval-rst}", f".. automodule:: {name}", ""]
            module = importlib.import_module(name)
            for data in undocumented_data(name):
                value = getattr(module, data)
                if inspect.ismodule(value):  # a module re-exported by name (``kopf.lifecycles``): its summary
                    summary = (inspect.getdoc(value) or "").strip().split("\n\n")[0].replace("\n", " ")
                    lines += [
                        f".. py:data:: {data}",
                        f"   :module: {name}",
                        "",
                        f"   The module ``{value.__name__}``. {summary}",
                        "",
                    ]
                    continue
                lines += [f".. autodata:: {name}.{data}"]
                if len(repr(getattr(module, data))) > 100:
                    lines += ["   :no-value:"]
                lines += [""]
            lines += ["```", ""]
        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("api-modules", ApiModules)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
