"""
The public names of the documented API reference, with their documented signatures.

Where the published framework (1.45) extends a documented signature (e.g. ``fns=``, ``backoffs=``),
the row has the published one: see ``tests/compat`` for the check against the installed package.

Every row is a name as documented and its signature as documented (``None`` for names
that are documented without parameters: markers, enums, typed dicts, plain exceptions).
Every row is checked: all the documented names are implemented.

Defaults are compared by value; ``...`` stands for documented internal sentinels
that cannot be spelled (e.g. ``_UNSET.token``, ``<factory>``).
"""

import ast
import dataclasses
import importlib
import inspect
import pathlib
import subprocess
import sys
from typing import Any

import pytest

_RESOURCE = (
    "__group_or_groupversion_or_name=None, __version_or_name=None, __name=None, *, "
    "group=None, version=None, kind=None, plural=None, singular=None, shortcut=None, "
    "category=None, id=None, param=None"
)
_RETRYING = "errors=None, timeout=None, retries=None, backoff=None"
_FILTERS = "labels=None, annotations=None, when=None, field=None, value=None"
_ACTIVITY = f"(*, id=None, param=None, {_RETRYING}, registry=None)"
_WEBHOOK = (
    f"({_RESOURCE}, operation=None, operations=None, subresource=None, persistent=None, "
    f"side_effects=None, ignore_failures=None, {_FILTERS}, registry=None)"
)
_DAEMON = (
    f"({_RESOURCE}, {_RETRYING}, initial_delay=None, cancellation_backoff=None, "
    f"cancellation_timeout=None, cancellation_polling=None, {_FILTERS}, registry=None)"
)
_TIMER = (
    f"({_RESOURCE}, {_RETRYING}, interval=None, initial_delay=None, sharp=None, idle=None, {_FILTERS}, registry=None)"
)
_INDEX = f"({_RESOURCE}, {_RETRYING}, {_FILTERS}, registry=None)"
_REGISTER = f"(fn, *, id=None, param=None, {_RETRYING}, labels=None, annotations=None, when=None)"
_RUNNING = (
    "lifecycle=None, indexers=None, registry=None, settings=None, memories=None, insights=None, "
    "identity=None, standalone=None, priority=None, peering_name=None, liveness_endpoint=None, "
    "clusterwide=False, namespaces=(), namespace=None, stop_flag=None, ready_flag=None, "
    "vault=None, memo=None, _command=None"
)
_SERVER = (
    "(*, addr=None, port=None, path=None, host=None, cadata=None, cafile=None, cadump=None, "
    "context=None, insecure=False, certfile=None, pkeyfile=None, password=None, extra_sans=(), "
    "verify_mode=None, verify_cafile=None, verify_capath=None, verify_cadata=None, "
    "file_check_interval=60)"
)  # the admission chapter documents the interval; the reference omits it


@dataclasses.dataclass(frozen=True)
class Api:
    name: str
    signature: str | None


API: list[Api] = [
    # kopf: registration.
    Api("kopf.register", _REGISTER),
    Api("kopf.subhandler", f"(*, id=None, param=None, {_RETRYING}, {_FILTERS}, old=None, new=None)"),
    Api("kopf.daemon", _DAEMON),
    Api("kopf.timer", _TIMER),
    Api("kopf.index", _INDEX),
    Api("kopf.not_", "(fn)"),
    Api("kopf.all_", "(fns)"),
    Api("kopf.any_", "(fns)"),
    Api("kopf.none_", "(fns)"),
    Api("kopf.PRESENT", None),
    Api("kopf.ABSENT", None),
    Api("kopf.EVERYTHING", None),
    Api("kopf.OperatorRegistry", "()"),
    Api("kopf.get_default_registry", "()"),
    Api("kopf.set_default_registry", "(registry)"),
    Api("kopf.ErrorsMode", None),
    Api("kopf.Reason", None),
    Api(
        "kopf.Resource",
        "(group, version, plural, kind=None, singular=None, shortcuts=frozenset({}), "
        "categories=frozenset({}), subresources=frozenset({}), namespaced=None, "
        "preferred=True, verbs=frozenset({}))",
    ),
    Api("kopf.Resource.get_url", "(self, *, server=None, namespace=None, name=None, subresource=None, params=None)"),
    # kopf: errors.
    Api("kopf.PermanentError", None),
    Api("kopf.TemporaryError", "(_TemporaryError__msg=None, delay=60)"),
    Api("kopf.HandlerTimeoutError", None),
    Api("kopf.HandlerRetriesError", None),
    Api("kopf.AdmissionError", "(message='', code=500, *, reason=None, causes=None)"),  # ours: field causes (docs)
    # kopf: structures.
    Api("kopf.RawEvent", None),
    Api("kopf.RawBody", None),
    Api("kopf.Status", "(_Status__src)"),
    Api("kopf.Spec", "(_Spec__src)"),
    Api("kopf.Meta", "(_Meta__src)"),
    Api("kopf.Body", "(_Body__src)"),
    Api("kopf.BodyEssence", None),
    Api("kopf.ObjectReference", None),
    Api("kopf.OwnerReference", None),
    Api("kopf.Memo", None),
    Api("kopf.Diff", "(_Diff__items)"),
    Api("kopf.DiffItem", "(operation, field, old, new)"),
    Api("kopf.DiffOperation", None),
    Api("kopf.Patch", "(src=None, /, body=None, fns=())"),  # `fns` as in the published 1.45
    Api("kopf.Patch.as_json_patch", "(self)"),
    Api("kopf.build_object_reference", "(body)"),
    Api("kopf.build_owner_reference", "(body, *, controller=True, block_owner_deletion=True)"),
    # kopf: configuration & storages.
    Api(
        "kopf.OperatorSettings",
        "(process=..., posting=..., peering=..., watching=..., queueing=..., "
        "scanning=..., admission=..., execution=..., background=..., "
        "networking=..., persistence=...)",
    ),
    Api("kopf.DiffBaseStorage", None),
    Api("kopf.DiffBaseStorage.build", "(self, *, body, extra_fields=None)"),
    Api("kopf.DiffBaseStorage.fetch", "(self, *, body)"),
    Api("kopf.DiffBaseStorage.store", "(self, *, body, patch, essence)"),
    Api(
        "kopf.AnnotationsDiffBaseStorage",
        "(*, prefix='kopf.zalando.org', key='last-handled-configuration', ignored_fields=None, v1=True)",
    ),
    Api(
        "kopf.StatusDiffBaseStorage",
        "(*, name='kopf', field='status.{name}.last-handled-configuration', ignored_fields=None)",
    ),
    Api("kopf.MultiDiffBaseStorage", "(storages)"),
    Api("kopf.ProgressRecord", None),
    Api("kopf.ProgressStorage", None),
    Api("kopf.ProgressStorage.fetch", "(self, *, key, body)"),
    Api("kopf.ProgressStorage.store", "(self, *, key, record, body, patch)"),
    Api("kopf.ProgressStorage.purge", "(self, *, key, body, patch)"),
    Api("kopf.ProgressStorage.touch", "(self, *, body, patch, value)"),
    Api("kopf.ProgressStorage.clear", "(self, *, essence)"),
    Api("kopf.ProgressStorage.flush", "(self)"),
    Api(
        "kopf.AnnotationsProgressStorage",
        "(*, prefix='kopf.zalando.org', verbose=False, touch_key='touch-dummy', v1=True)",
    ),
    Api(
        "kopf.StatusProgressStorage",
        "(*, name='kopf', field='status.{name}.progress', touch_field='status.{name}.dummy')",
    ),
    Api("kopf.MultiProgressStorage", "(storages)"),
    Api(
        "kopf.SmartProgressStorage",
        "(*, name='kopf', field='status.{name}.progress', "
        "touch_key='touch-dummy', touch_field='status.{name}.dummy', "
        "prefix='kopf.zalando.org', v1=True, verbose=False)",
    ),
    # kopf: hierarchies.
    Api("kopf.adopt", "(objs, owner=None, *, forced=False, strict=False, nested=None)"),
    Api("kopf.label", "(objs, labels=..., *, forced=False, nested=None, force=None)"),
    Api("kopf.append_owner_reference", "(objs, owner=None, *, controller=True, block_owner_deletion=True)"),
    Api("kopf.remove_owner_reference", "(objs, owner=None)"),
    Api("kopf.harmonize_naming", None),
    Api("kopf.adjust_namespace", None),
    # kopf: execution, running, logging, events, auth, webhooks, in-memory containers.
    Api("kopf.execute", "(*, fns=None, handlers=None, registry=None, lifecycle=None, cause=None)"),
    Api("kopf.get_default_lifecycle", "()"),
    Api("kopf.set_default_lifecycle", "(lifecycle)"),
    Api(
        "kopf.configure",
        "(debug=None, verbose=None, quiet=None, log_format=LogFormat.FULL, log_prefix=False, log_refkey=None)",
    ),
    Api("kopf.LogFormat", None),
    Api("kopf.login_via_pykube", "(*, logger, **_)"),
    Api("kopf.login_via_client", "(*, logger, **_)"),
    Api("kopf.login_with_kubeconfig", "(**_)"),
    Api("kopf.login_with_service_account", "(**_)"),
    Api("kopf.LoginError", None),
    Api(
        "kopf.ConnectionInfo",
        "(server, ca_path=None, ca_data=None, insecure=None, username=None, "
        "password=None, scheme=None, token=None, certificate_path=None, "
        "certificate_data=None, private_key_path=None, private_key_data=None, "
        "default_namespace=None, priority=0, expiration=None, proxy_url=None, "
        "trust_env=False)",
    ),
    Api("kopf.event", "(objs, *, type, reason, message='', backoffs=None)"),
    Api("kopf.info", "(objs, *, reason, message='', backoffs=None)"),
    Api("kopf.warn", "(objs, *, reason, message='', backoffs=None)"),
    Api("kopf.exception", "(objs, *, reason='', message='', exc=None, backoffs=None)"),
    Api("kopf.spawn_tasks", f"(*, {_RUNNING})"),
    Api("kopf.run_tasks", "(root_tasks, *, ignored=frozenset({}), return_when='FIRST_COMPLETED')"),
    Api("kopf.operator", f"(*, {_RUNNING})"),
    Api("kopf.run", f"(*, loop=None, {_RUNNING})"),
    Api("kopf.WebhookClientConfigService", None),
    Api("kopf.WebhookClientConfig", None),
    Api("kopf.UserInfo", None),
    Api("kopf.WebhookFn", None),
    Api("kopf.WebhookServer", _SERVER),
    Api("kopf.WebhookServer.build_certificate", "(hostnames, password=None)"),
    Api("kopf.WebhookK3dServer", _SERVER),
    Api("kopf.WebhookMinikubeServer", _SERVER),
    Api("kopf.WebhookNgrokTunnel", "(*, addr=None, port=None, path=None, token=None, region=None, binary=None)"),
    Api("kopf.WebhookAutoServer", _SERVER),
    Api("kopf.WebhookAutoTunnel", "(*, addr=None, port=None, path=None)"),
    Api("kopf.Index", None),
    Api("kopf.Store", None),
    Api("kopf.ObjectLogger", "(*, body, settings)"),
    Api("kopf.LocalObjectLogger", "(*, body, settings)"),
    Api("kopf.DaemonStopped", None),
    Api("kopf.DaemonStoppingReason", None),
    # kopf.on
    Api("kopf.on.startup", _ACTIVITY),
    Api("kopf.on.cleanup", _ACTIVITY),
    Api("kopf.on.login", _ACTIVITY),
    Api("kopf.on.probe", _ACTIVITY),
    Api("kopf.on.validate", _WEBHOOK),
    Api("kopf.on.mutate", _WEBHOOK),
    Api("kopf.on.resume", f"({_RESOURCE}, {_RETRYING}, deleted=None, {_FILTERS}, registry=None)"),
    Api("kopf.on.create", f"({_RESOURCE}, {_RETRYING}, {_FILTERS}, registry=None)"),
    Api("kopf.on.update", f"({_RESOURCE}, {_RETRYING}, {_FILTERS}, old=None, new=None, registry=None)"),
    Api("kopf.on.delete", f"({_RESOURCE}, {_RETRYING}, optional=None, {_FILTERS}, registry=None)"),
    Api(
        "kopf.on.field",
        f"({_RESOURCE}, {_RETRYING}, labels=None, annotations=None, when=None, field, "
        f"value=None, old=None, new=None, registry=None)",
    ),
    Api("kopf.on.index", _INDEX),
    Api("kopf.on.event", f"({_RESOURCE}, {_FILTERS}, registry=None)"),
    Api("kopf.on.daemon", _DAEMON),
    Api("kopf.on.timer", _TIMER),
    Api("kopf.on.subhandler", f"(*, id=None, param=None, {_RETRYING}, {_FILTERS}, old=None, new=None)"),
    Api("kopf.on.register", _REGISTER),
    # kopf.testing & kopf.cli
    Api("kopf.testing.KopfRunner", "(*args, reraise=True, timeout=None, registry=None, settings=None, **kwargs)"),
    Api(
        "kopf.cli.CLIControls", "(ready_flag=None, stop_flag=None, vault=None, registry=None, settings=None, loop=None)"
    ),
    Api("kopf.cli.LogFormatParamType", None),
    Api("kopf.cli.logging_options", "(fn)"),
]

CHECKED = API

_NO_DEFAULT = object()
_SENTINEL = object()  # for `...`: a default exists, but its value is not comparable.


def resolve(name: str) -> Any:
    """Find an object by its dotted public name: the longest importable module, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def expected_params(signature: str) -> list[tuple[str, inspect._ParameterKind, Any]]:
    """Parse a documented signature into (name, kind, default) triples."""
    import kopf

    tree = ast.parse(f"def _{signature}: pass")
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    args = fn.args
    namespace = {name: getattr(kopf, name) for name in dir(kopf) if not name.startswith("_")}

    def value(node: ast.expr | None) -> Any:
        if node is None:
            return _NO_DEFAULT
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            return _SENTINEL
        return eval(compile(ast.Expression(node), "<signature>", "eval"), namespace)

    result: list[tuple[str, inspect._ParameterKind, Any]] = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in zip(args.posonlyargs, defaults[: len(args.posonlyargs)], strict=True):
        result.append((arg.arg, inspect.Parameter.POSITIONAL_ONLY, value(default)))
    for arg, default in zip(args.args, defaults[len(args.posonlyargs) :], strict=True):
        result.append((arg.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, value(default)))
    if args.vararg:
        result.append((args.vararg.arg, inspect.Parameter.VAR_POSITIONAL, _NO_DEFAULT))
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        result.append((arg.arg, inspect.Parameter.KEYWORD_ONLY, value(kw_default)))
    if args.kwarg:
        result.append((args.kwarg.arg, inspect.Parameter.VAR_KEYWORD, _NO_DEFAULT))
    return result


def actual_params(obj: Any) -> list[tuple[str, inspect._ParameterKind, Any]]:
    signature = inspect.signature(obj)
    return [
        (param.name, param.kind, _NO_DEFAULT if param.default is inspect.Parameter.empty else param.default)
        for param in signature.parameters.values()
    ]


@pytest.mark.parametrize("api", CHECKED, ids=[api.name for api in CHECKED])
def test_documented_name_exists(api: Api) -> None:
    resolve(api.name)


@pytest.mark.parametrize(
    "api",
    [api for api in CHECKED if api.signature is not None],
    ids=[api.name for api in CHECKED if api.signature is not None],
)
def test_documented_signature(api: Api) -> None:
    assert api.signature is not None
    expected = expected_params(api.signature)
    actual = actual_params(resolve(api.name))
    assert [(name, kind) for name, kind, _ in actual] == [(name, kind) for name, kind, _ in expected]
    for (name, _, actual_default), (_, _, expected_default) in zip(actual, expected, strict=True):
        if expected_default is _SENTINEL:
            assert actual_default is not _NO_DEFAULT, f"{name} must have a default"
        else:
            assert actual_default == expected_default, f"the default of {name}"


def test_the_table_has_no_duplicates() -> None:
    names = [api.name for api in API]
    assert len(names) == len(set(names))


def test_the_table_parses() -> None:
    for api in API:
        if api.signature is not None:
            ast.parse(f"def _{api.signature}: pass")


def test_all_exports_are_importable() -> None:
    import kopf

    for name in kopf.__all__:
        assert hasattr(kopf, name), name


def test_the_optional_parts_are_imported_on_their_first_use(tmp_path: pathlib.Path) -> None:
    # In a fresh interpreter: the webhooks, the JSON log format, the kubeconfig's YAML (not needed in-cluster),
    # and the JSON-patches of the patch functions cost start-up time to every operator.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("clusters:\n- name: c\n  cluster: {server: 'https://h'}\n")
    code = (
        "import sys, kopf, kopf.cli\n"
        "lazy = ('kopf._kits.webhooks', 'pythonjsonlogger', 'yaml', 'jsonpatch')\n"
        "print(sorted(m for m in lazy if m in sys.modules))\n"
        "from kopf import WebhookServer\n"
        "from kopf._cogs.helpers.loggers import LogFormat, make_formatter\n"
        "from kopf._cogs.structs.patches import make_fns_patch\n"
        "from kopf._core.intents.logins.kubeconfigs import load_kubeconfig\n"
        "formatter = make_formatter(LogFormat.JSON)\n"
        "print(WebhookServer.__module__, type(formatter).__name__, 'WebhookK3dServer' in dir(kopf))\n"
        "print(make_fns_patch({}, [lambda body: body.update(spec={'x': 1})]))\n"
        "config, found = load_kubeconfig([sys.argv[1]])\n"
        "print(len(found), sorted(m for m in lazy if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code, str(kubeconfig)], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == [
        "[]",
        "kopf._kits.webhooks ObjectJsonFormatter True",
        "[{'op': 'add', 'path': '/spec', 'value': {'x': 1}}]",
        "1 ['jsonpatch', 'kopf._kits.webhooks', 'pythonjsonlogger', 'yaml']",
    ]


def test_documented_enum_values() -> None:
    import kopf

    assert {m.name: m.value for m in kopf.ErrorsMode} == {"IGNORED": 1, "TEMPORARY": 2, "PERMANENT": 3}
    assert {m.name: m.value for m in kopf.Reason} == {
        "CREATE": "create",
        "UPDATE": "update",
        "DELETE": "delete",
        "RESUME": "resume",
        "NOOP": "noop",
        "FREE": "free",
        "GONE": "gone",
    }
    assert issubclass(kopf.Reason, str)
    assert {m.name: m.value for m in kopf.DiffOperation} == {"ADD": "add", "CHANGE": "change", "REMOVE": "remove"}


def test_documented_exception_hierarchy() -> None:
    import kopf

    assert issubclass(kopf.PermanentError, Exception)
    assert issubclass(kopf.TemporaryError, Exception)
    assert not issubclass(kopf.TemporaryError, kopf.PermanentError)
    assert issubclass(kopf.HandlerTimeoutError, kopf.PermanentError)
    assert issubclass(kopf.HandlerRetriesError, kopf.PermanentError)
    assert issubclass(kopf.AdmissionError, kopf.PermanentError)


def test_documented_resource_fields() -> None:
    import kopf

    fields = [field.name for field in dataclasses.fields(kopf.Resource)]
    assert fields == [
        "group",
        "version",
        "plural",
        "kind",
        "singular",
        "shortcuts",
        "categories",
        "subresources",
        "namespaced",
        "preferred",
        "verbs",
    ]


def test_logger_type_for_handlers_annotations() -> None:
    import logging
    import typing

    import kopf

    assert set(typing.get_args(kopf.Logger)) == {logging.Logger, logging.LoggerAdapter[typing.Any]}

    def handler(logger: kopf.Logger, **_: typing.Any) -> None:  # usable in the handlers' annotations
        logger.info("hello")

    assert typing.get_type_hints(handler)["logger"] == kopf.Logger
