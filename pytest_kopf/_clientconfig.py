"""The official clients' configuration in sim mode: a kubeconfig of the test's own, and in-cluster loading to match.

While a sim-mode test runs, ``KUBECONFIG`` names a kubeconfig written for it, whose server is the
host name of the test's cluster (``http://kopf-sim-N.test``, routed in memory by :mod:`pytest_kopf._routing`).
So the documented ways to configure a client reach the simulated cluster, with no change to the code:

- ``kubernetes.config.load_kube_config()`` and ``kubernetes_asyncio.config.load_kube_config()``;
- ``pykube.KubeConfig.from_env()`` / ``from_file()`` (with no path: ``KUBECONFIG``);
- kopf's own login from a kubeconfig (``kopf.login_via_client``, ``kopf.login_with_kubeconfig``);
- the client libraries' default configurations (``kubernetes.client.CoreV1Api()`` with no configuration
  loaded by the operator's code), as kopf's login through the official client leaves them outside tests;
- ``kubernetes.config.load_incluster_config()``, ``kubernetes_asyncio.config.load_incluster_config()`` and
  ``pykube.KubeConfig.from_service_account()``: a test process is never in a cluster, so in sim mode these
  load the test's cluster too (they are swapped in the modules imported by then: the test's, and the
  operator's after its files are loaded).

Everything is restored when the test ends. In real mode (:class:`RealClientDefaults`), only the default
configuration of the official ``kubernetes`` client is set, from the kubeconfig context of the run, as kopf's
login through that client leaves it with ``kopf run`` (the plugin logs the operator in by itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from kopf_sim.transports.inmemory import InMemoryServer
from kopf_sim.transports.kubeconfig import kubeconfig_dict

from . import _routing as routing

__all__ = ["ClientConfig", "RealClientDefaults", "refresh_active", "routed_clients"]

_ENV = "KUBECONFIG"
# The handlers' clients' token: the simulated apiserver takes it as the operator's (see SimControls).
CLIENTS_TOKEN = "kopf-sim-test"
_active: list[ClientConfig | RealClientDefaults] = []


def refresh_active() -> None:
    """Swap the in-cluster loaders of the client libraries imported since the test began (e.g. by an operator)."""
    for config in _active:
        config.refresh()


@contextlib.contextmanager
def routed_clients(
    loop: asyncio.AbstractEventLoop, server: InMemoryServer, directory: pathlib.Path
) -> Iterator[ClientConfig]:
    """
    The official clients configured for a simulated cluster while the block runs, and routed to it in memory.

    For every simulated cluster that runs an operator: the ``kopf_cluster`` fixture's and each world of the
    operator checks (the handlers there use the official clients as much as anywhere else).
    """
    clients = ClientConfig(host=routing.new_host(), directory=directory)
    routing.add_route(routing.Route(clients.host, loop, server))
    try:
        clients.activate()
        yield clients
    finally:
        clients.deactivate()
        routing.remove_route(clients.host)
        clients.path.unlink(missing_ok=True)


class ClientConfig:
    """The per-test kubeconfig in the environment, and the in-cluster loaders swapped for the test's cluster."""

    def __init__(self, *, host: str, directory: pathlib.Path) -> None:
        self.host = host
        self.server = f"http://{host}"
        self.path = directory / f"{host}.kubeconfig"
        self._previous_env: str | None = None
        self._swapped: list[tuple[Any, str, Any]] = []

    def activate(self) -> None:
        config = kubeconfig_dict(
            server=self.server,
            token=CLIENTS_TOKEN,
            cluster_name=self.host,
            context_name=self.host,
            user_name=self.host,
            namespace="default",
        )
        self.path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML, and much faster to write
        self._previous_env = os.environ.get(_ENV)
        os.environ[_ENV] = str(self.path)
        _active.append(self)
        self.refresh()

    def deactivate(self) -> None:
        if self in _active:
            _active.remove(self)
        for owner, name, original in reversed(self._swapped):
            setattr(owner, name, original)
        self._swapped.clear()
        if os.environ.get(_ENV) == str(self.path):
            if self._previous_env is None:
                del os.environ[_ENV]
            else:
                os.environ[_ENV] = self._previous_env

    def refresh(self) -> None:
        """Swap the in-cluster loaders of the client libraries imported since the last time.

        The official clients also read ``KUBECONFIG`` once, at their import, as their default path:
        that default is swapped too.
        """
        for module_name in (
            "kubernetes.config.kube_config",
            "kubernetes.config",
            "kubernetes_asyncio.config.kube_config",
            "kubernetes_asyncio.config",
        ):
            module = sys.modules.get(module_name)
            if module is not None:
                # Imported during this test, the module has taken this test's path as its default: after the
                # test, it gets the default it would have had without the test, not a path that is gone.
                outside = self._previous_env or "~/.kube/config"
                self._swap(
                    module,
                    "KUBE_CONFIG_DEFAULT_LOCATION",
                    str(self.path),
                    original=outside
                    if getattr(module, "KUBE_CONFIG_DEFAULT_LOCATION", None) == str(self.path)
                    else None,
                )
        kubernetes_config = sys.modules.get("kubernetes.config")
        if kubernetes_config is not None:
            self._swap(
                kubernetes_config,
                "load_incluster_config",
                self._loader("kubernetes.client", kubernetes_config.load_incluster_config),
            )
        asyncio_config = sys.modules.get("kubernetes_asyncio.config")
        if asyncio_config is not None:
            self._swap(
                asyncio_config,
                "load_incluster_config",
                self._loader("kubernetes_asyncio.client", asyncio_config.load_incluster_config),
            )
        for client_module in ("kubernetes.client", "kubernetes_asyncio.client"):
            self._swap_default_configuration(client_module)
        pykube = sys.modules.get("pykube")
        kubeconfig_class = getattr(pykube, "KubeConfig", None)
        if kubeconfig_class is not None and "from_service_account" in kubeconfig_class.__dict__:
            path = str(self.path)
            original = kubeconfig_class.__dict__["from_service_account"].__func__
            is_ours = self._is_ours

            def from_service_account(cls: Any, *args: Any, **kwargs: Any) -> Any:
                return cls.from_file(path) if is_ours() else original(cls, *args, **kwargs)

            self._swap(kubeconfig_class, "from_service_account", classmethod(from_service_account))

    def _swap_default_configuration(self, client_module: str) -> None:
        """Configure the client library's default for the test's cluster, as kopf's login leaves it outside tests.

        An operator's handlers may call ``kubernetes.client.CoreV1Api()`` with no configuration of their own:
        ``kopf run`` logs in through the official client, which leaves its default configuration set.
        """
        configuration_class = getattr(sys.modules.get(client_module), "Configuration", None)
        if configuration_class is None:
            return
        if any(owner is configuration_class and name == "_default" for owner, name, _ in self._swapped):
            return
        self._swapped.append((configuration_class, "_default", configuration_class.__dict__.get("_default")))
        config = configuration_class()
        config.host = self.server
        config.api_key = {"authorization": CLIENTS_TOKEN}
        config.api_key_prefix = {"authorization": "Bearer"}
        configuration_class.set_default(config)

    def _is_ours(self) -> bool:
        """Whether ``KUBECONFIG`` still names this test's kubeconfig (a test may point it to a served cluster)."""
        return os.environ.get(_ENV) == str(self.path)

    def _swap(self, owner: Any, name: str, replacement: Any, *, original: Any = None) -> None:
        if any(swapped_owner is owner and swapped_name == name for swapped_owner, swapped_name, _ in self._swapped):
            return
        if original is None:
            original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if original is None:
            return
        self._swapped.append((owner, name, original))
        setattr(owner, name, replacement)

    def _loader(self, client_module: str, original: Any) -> Any:
        server = self.server
        is_ours = self._is_ours

        def load_incluster_config(client_configuration: Any = None, *args: Any, **kwargs: Any) -> None:
            """In sim mode: configure the client for the test's simulated cluster (as in-cluster, with a token).

            If the test has pointed ``KUBECONFIG`` elsewhere (e.g. to the cluster served for a thread or
            a subprocess), the process is not in a cluster, as outside the tests.
            """
            if not is_ours():
                return original(client_configuration, *args, **kwargs)  # type: ignore[no-any-return]
            configuration_class = sys.modules[client_module].Configuration
            config = client_configuration if client_configuration is not None else configuration_class()
            config.host = server
            config.api_key = {"authorization": CLIENTS_TOKEN}
            config.api_key_prefix = {"authorization": "Bearer"}
            if client_configuration is None:
                configuration_class.set_default(config)

        return load_incluster_config


class RealClientDefaults:
    """Real mode: the official client's default configuration for the run's kubeconfig context, during a test.

    Outside tests, ``kopf run`` logs in through the official client, which leaves its default configuration
    set, and handlers may call ``kubernetes.client.CoreV1Api()`` with no configuration of their own. In tests,
    the plugin logs the operator in by itself, so it sets that default as the login would, once the client is
    imported (by the test or the operator's files), and restores the previous one after the test.
    """

    def __init__(self, *, paths: Sequence[str], context: str | None) -> None:
        self.paths = list(paths)
        self.context = context
        self._swapped: tuple[Any, Any] | None = None  # the configuration class & its previous default

    def activate(self) -> None:
        _active.append(self)
        self.refresh()

    def deactivate(self) -> None:
        if self in _active:
            _active.remove(self)
        if self._swapped is not None:
            configuration_class, previous = self._swapped
            configuration_class._default = previous
            self._swapped = None

    def refresh(self) -> None:
        client = sys.modules.get("kubernetes.client")
        config_module = sys.modules.get("kubernetes.config")
        configuration_class = getattr(client, "Configuration", None)
        if self._swapped is not None or configuration_class is None or config_module is None:
            return
        config = configuration_class()
        try:
            config_module.load_kube_config(
                config_file=os.pathsep.join(self.paths) or None,
                context=self.context,
                client_configuration=config,
                persist_config=False,
            )
        except (config_module.ConfigException, OSError, ValueError):
            return  # the client cannot read this context: handlers configure it themselves, as they would have to
        self._swapped = (configuration_class, configuration_class.__dict__.get("_default"))
        configuration_class.set_default(config)
