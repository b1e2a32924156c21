"""
``cli-options``: the options of a click command, rendered from the command itself.

The option tables of the CLI reference cannot fall behind the code: every option, its aliases, its
value type, its default and its help text come from the click objects (e.g. ``kopf.cli:run``)::

    ```{cli-options} kopf.cli:run
    :auto-envvar-prefix: KOPF_RUN
    ```

With ``:auto-envvar-prefix:``, the options without an environment variable of their own are shown with the
one that click derives from the prefix and the option's name (``auto_envvar_prefix`` of the command group).
"""

from __future__ import annotations

import importlib
from typing import Any

import click
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def load_command(spec: str) -> click.Command:
    module_name, _, attr = spec.partition(":")
    command = importlib.import_module(module_name)
    for part in attr.split("."):
        command = getattr(command, part)
    if not isinstance(command, click.Command):
        raise TypeError(f"{spec} is not a click command")
    return command


def describe_value(param: click.Parameter) -> str:
    """The value an option takes (``TEXT``, ``INTEGER``, ``[plain|full|json]``), or nothing for flags."""
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return ""
    if param.metavar:
        return param.metavar
    if isinstance(param.type, click.Choice):
        return "[" + "|".join(str(choice) for choice in param.type.choices) + "]"
    return param.type.name.upper()


def describe_default(param: click.Option) -> str | None:
    if param.is_flag and not param.secondary_opts:
        return None
    default: Any = param.default
    if default is None or default == () or callable(default) or type(default).__name__ == "Sentinel":
        return None  # no default (click >= 8.2 marks it with its own sentinel)
    if isinstance(default, bool):
        return f"{param.opts[0] if default else param.secondary_opts[0]}" if param.secondary_opts else None
    return str(default)


class CliOptions(SphinxDirective):
    required_arguments = 1
    has_content = False
    option_spec = {"auto-envvar-prefix": str}

    def run(self) -> list[nodes.Node]:
        command = load_command(self.arguments[0])
        items = nodes.definition_list()
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            value = describe_value(param)
            term = nodes.term()
            names = [*param.opts, *param.secondary_opts]
            for index, name in enumerate(names):
                if index:
                    term += nodes.Text(", ")
                term += nodes.literal(text=f"{name} {value}" if value and index == len(param.opts) - 1 else name)
            body = nodes.paragraph(text=param.help or "")
            extras = []
            default = describe_default(param)
            if param.required:
                extras.append("required")
            elif default is not None:
                extras.append(f"default: {default}")
            if param.multiple:
                extras.append("repeatable")
            prefix = self.options.get("auto-envvar-prefix")
            if isinstance(param.envvar, str):
                extras.append(f"environment variable: {param.envvar}")
            elif prefix and param.name:
                extras.append(f"environment variable: {prefix}_{param.name.upper()}")
            if extras:
                body += nodes.Text(" (" + "; ".join(extras) + ")")
            items += nodes.definition_list_item("", term, nodes.definition("", body))
        return [items]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("cli-options", CliOptions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
