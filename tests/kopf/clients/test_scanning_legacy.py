"""Discovery against an apiserver without aggregated discovery: the legacy lists of every group-version."""

import pytest

from kopf._cogs.clients import scanning
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf_sim.http.app import ServerOptions

from .conftest import Recorder, status_response
from .test_scanning import by_name


@pytest.fixture
def server_options() -> ServerOptions:
    return ServerOptions(bookmark_interval=60, aggregated_discovery=False)


async def test_legacy_discovery_of_builtins_and_crds(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    resources = by_name(await scanning.discover(settings=settings, vault=vault))
    assert {"/api", "/apis", "/api/v1", "/apis/apps/v1", "/apis/acme.example/v1"} <= set(recorder.paths())
    assert resources["pods.v1"].subresources == {"status"}
    assert resources["widgets.v1.acme.example"].kind == "Widget"


async def test_broken_group_versions_are_skipped(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    settings.networking.error_backoffs = []
    recorder.fail(1, status_response(503, "ServiceUnavailable"), when=lambda r: r.path == "/apis/acme.example/v1")
    resources = by_name(await scanning.discover(settings=settings, vault=vault))
    assert "widgets.v1.acme.example" not in resources
    assert "pods.v1" in resources
