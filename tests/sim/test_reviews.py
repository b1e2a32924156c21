"""The authorization reviews are answered "allowed" (the simulator allows every request), and never stored."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from kopf_sim.store.cluster import Cluster

from .test_bad_input import snapshot

API = "/apis/authorization.k8s.io/v1"
ASK = {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}}


def review(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}


@pytest.mark.parametrize(
    ("url", "body", "status"),
    [
        (f"{API}/selfsubjectaccessreviews", review("SelfSubjectAccessReview", ASK), {"allowed": True}),
        (
            f"{API}/subjectaccessreviews",
            review("SubjectAccessReview", {**ASK, "user": "alice", "groups": ["devs"]}),
            {"allowed": True},
        ),
        (
            f"{API}/namespaces/default/localsubjectaccessreviews",
            review("LocalSubjectAccessReview", {**ASK, "user": "alice"}),
            {"allowed": True},
        ),
        (
            f"{API}/selfsubjectrulesreviews",
            review("SelfSubjectRulesReview", {"namespace": "default"}),
            {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            },
        ),
    ],
)
async def test_reviews_are_allowed_and_not_stored(
    client: aiohttp.ClientSession, crd_cluster: Cluster, url: str, body: dict[str, Any], status: dict[str, Any]
) -> None:
    before = snapshot(crd_cluster)
    async with client.post(url, json=body) as response:
        assert response.status == 201
        answered = await response.json()
    assert answered["kind"] == body["kind"]
    assert answered["spec"] == body["spec"]
    assert answered["status"] == status
    assert snapshot(crd_cluster) == before


async def test_reviews_are_create_only_and_checked(client: aiohttp.ClientSession) -> None:
    async with client.get(f"{API}/selfsubjectaccessreviews") as response:
        assert (response.status, (await response.json())["reason"]) == (405, "MethodNotAllowed")
    async with client.post(f"{API}/subjectaccessreviews", json=review("SubjectAccessReview", ASK)) as response:
        assert response.status == 422
        assert (await response.json())["message"] == (
            'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
            "at least one of user or group must be specified"
        )
    async with client.post(f"{API}/selfsubjectaccessreviews", json=review("SelfSubjectAccessReview", {})) as response:
        assert response.status == 422
