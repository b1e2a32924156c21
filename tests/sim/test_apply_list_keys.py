"""Server-side apply keys lists by the schemas' list-map keys, which are not always the strategic merge keys.

Ports are keyed by number and protocol (TCP if omitted), so one port number can serve TCP and UDP (DNS);
an applied configuration that breaks the keys is refused with the apiserver's words, never with a 5xx.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from kopf_sim.store.cluster import Cluster

from .test_bad_input import snapshot

NS = "/api/v1/namespaces/default"
APPLY = "application/apply-patch+yaml"


async def apply(client: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, dict[str, Any]]:
    async with client.patch(
        url, params={"fieldManager": "test"}, data=json.dumps(body), headers={"Content-Type": APPLY}
    ) as response:
        return response.status, dict(await response.json())


def dns_pod(*ports: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "c", "image": "coredns", "ports": list(ports)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dns"}, "spec": {"containers": [container]}}


async def test_one_container_port_over_tcp_and_udp(client: aiohttp.ClientSession) -> None:
    body = dns_pod({"containerPort": 53}, {"containerPort": 53, "protocol": "UDP"})
    code, pod = await apply(client, f"{NS}/pods/dns", body)
    assert code == 201, pod
    assert [p.get("protocol", "TCP") for p in pod["spec"]["containers"][0]["ports"]] == ["TCP", "UDP"]
    fields = pod["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"c"}']["f:ports"]
    assert sorted(fields) == ['k:{"containerPort":53,"protocol":"TCP"}', 'k:{"containerPort":53,"protocol":"UDP"}']


async def test_a_reapply_finds_ports_by_their_defaulted_protocol(client: aiohttp.ClientSession) -> None:
    def deployment(*ports: dict[str, Any]) -> dict[str, Any]:
        template = {"metadata": {"labels": {"app": "dns"}}, "spec": dns_pod(*ports)["spec"]}
        spec = {"selector": {"matchLabels": {"app": "dns"}}, "template": template}
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dns"}, "spec": spec}

    url = "/apis/apps/v1/namespaces/default/deployments/dns"
    code, _ = await apply(client, url, deployment({"containerPort": 53}, {"containerPort": 53, "protocol": "UDP"}))
    assert code == 201
    code, applied = await apply(client, url, deployment({"containerPort": 53}))
    assert code == 200, applied
    ports = applied["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert [p.get("protocol", "TCP") for p in ports] == ["TCP"]


async def test_one_service_port_over_tcp_and_udp(client: aiohttp.ClientSession) -> None:
    ports = [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dns"}, "spec": {"ports": ports}}
    code, created = await apply(client, f"{NS}/services/dns", service)
    assert code == 201, created
    assert [(p["port"], p["protocol"]) for p in created["spec"]["ports"]] == [(53, "UDP"), (53, "TCP")]


async def test_duplicate_keys_are_refused(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    before = snapshot(crd_cluster)
    code, status = await apply(client, f"{NS}/pods/dns", dns_pod({"containerPort": 53}, {"containerPort": 53}))
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        "failed to create typed patch object (default/dns; /v1, Kind=Pod): "
        '.spec.containers[name="c"].ports: duplicate entries for key [containerPort=53,protocol="TCP"]'
    )
    assert snapshot(crd_cluster) == before

    code, _ = await apply(client, f"{NS}/pods/dns", dns_pod({"containerPort": 53}))
    assert code == 201
    before = snapshot(crd_cluster)
    twice = {"name": "A", "value": "1"}
    body = dns_pod({"containerPort": 53}, {"containerPort": 53, "protocol": "TCP"})
    body["spec"]["containers"][0]["env"] = [twice, twice]
    code, status = await apply(client, f"{NS}/pods/dns", body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        "failed to create typed patch object (default/dns; /v1, Kind=Pod): errors:\n"
        '  .spec.containers[name="c"].ports: duplicate entries for key [containerPort=53,protocol="TCP"]\n'
        '  .spec.containers[name="c"].env: duplicate entries for key [name="A"]'
    )
    assert snapshot(crd_cluster) == before
