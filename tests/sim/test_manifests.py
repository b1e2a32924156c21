"""Reading manifests for ``--load``: JSON documents parsed as JSON, YAML from the first other one on, one at a time."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from click.testing import CliRunner

from kopf_sim import cli, manifests
from kopf_sim.kube.errors import ApiError
from kopf_sim.manifests import ManifestError, iter_manifests, parse_manifests, read_manifest
from kopf_sim.store import pipeline
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def test_json_documents_read_as_yaml_would(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "objects.yaml"
    pretty = json.dumps(configmap("b"), indent=2)
    path.write_text(f"---\n{json.dumps(configmap('a'))}\n---\n{pretty}\n---\n\n---\n{json.dumps(configmap('c'))}")
    assert read_manifest(path) == parse_manifests(path.read_text()) == [configmap(n) for n in "abc"]


def test_documents_split_across_the_blocks_read(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "objects.yaml"
    pretty = json.dumps(configmap("b"), indent=2)
    text = f"---\n{json.dumps(configmap('a'))}\n--- \n{pretty}\n---\n\n---\n{json.dumps(configmap('c'))}\n---"
    path.write_text(text)
    expected = [configmap(n) for n in "abc"]
    for block in (1, 2, 3, 5, 8, 13, 1 << 20):
        monkeypatch.setattr(manifests, "_BLOCK", block)
        assert read_manifest(path) == parse_manifests(text) == expected


def test_only_a_line_of_dashes_alone_is_a_marker(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dashes that end a line (or more than three of them) cut nothing; a marker with spaces after it does."""
    path = tmp_path / "objects.yaml"
    a, b, c = ({**configmap(n), "data": {"k": f"{n}---"}} for n in "abc")
    text = f"{json.dumps(a, indent=1)}\n--- \t\n{json.dumps(b)} \n---\n{json.dumps(c)}\n"
    yaml = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  k: d---\n"
    path.write_text(text.replace('"c---"', '"c---\\n----"') + yaml)
    expected = [a, b, {**c, "data": {"k": "c---\n----"}}, {**configmap("d"), "data": {"k": "d---"}}]
    for block in (1, 3, 7, 1 << 20):
        monkeypatch.setattr(manifests, "_BLOCK", block)
        assert read_manifest(path) == parse_manifests(path.read_text()) == expected
    path.write_text(f"{json.dumps(a)}---\n{json.dumps(b)}\n")  # dashes after a document: not a marker, not YAML
    with pytest.raises(ManifestError, match="is not valid YAML"):
        read_manifest(path)


def test_yaml_after_json_documents_is_read_as_yaml(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "objects.yaml"
    block = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: |\n    ---\n    v\n"
    path.write_text(f"{json.dumps(configmap('a'))}\n---\n{block}---\n{json.dumps(configmap('c'))}\n")
    for block in (3, 1 << 20):
        monkeypatch.setattr(manifests, "_BLOCK", block)
        documents = read_manifest(path)
        assert [doc["metadata"]["name"] for doc in documents] == ["a", "b", "c"]
        assert documents[1]["data"] == {"k": "---\nv\n"}  # a "---" inside a block scalar is not a separator


def test_a_json_list_is_one_document(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [configmap("a"), configmap("b")]}))
    cluster = Cluster()
    assert cluster.load(iter_manifests([path])) == 2
    assert cluster.count(("", "configmaps")) == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"apiVersion": "v1"}\n', r"objects.yaml, document 1: not a Kubernetes object"),
        (f"{json.dumps(configmap('a'))}\n---\n[1, 2]\n", r"objects.yaml, document 2: not a Kubernetes object"),
        (f"{json.dumps(configmap('a'))}\n---\nkey: [unclosed\n", r"objects.yaml is not valid YAML"),
    ],
)
def test_bad_manifests_are_named_errors(tmp_path: pathlib.Path, text: str, message: str) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError, match=message):
        read_manifest(path)


def test_a_missing_or_undecodable_file_is_a_named_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ManifestError, match=r"cannot read .*absent.yaml: No such file or directory"):
        read_manifest(tmp_path / "absent.yaml")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ManifestError, match=r"cannot read .*binary.yaml: 'utf-8' codec can't decode"):
        read_manifest(tmp_path / "binary.yaml")


def test_loading_keeps_no_document(tmp_path: pathlib.Path) -> None:
    """A load reads a document at a time and keeps none: what is stored is the cluster's own object."""
    path = tmp_path / "objects.yaml"
    path.write_text("".join(f"---\n{json.dumps(configmap(f'cm-{index}'))}\n" for index in range(20)))
    documents = iter_manifests([path])
    cluster = Cluster()
    assert cluster.load(documents) == 20
    assert [o["metadata"]["name"] for o in cluster.objects(("", "configmaps"))] == sorted(
        f"cm-{index}" for index in range(20)
    )


#: Objects of several kinds, each with what its create does to it: defaults, generated names and addresses, a
#: secret's stringData folded in, a custom resource's schema defaults, an admission policy's denial (and Warn).
_KINDS_MANIFEST = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, default: 3}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-forbidden-names}
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
    - expression: "!object.metadata.name.startsWith('forbidden-')"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-forbidden-names}
spec: {policyName: no-forbidden-names, validationActions: [Deny]}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}}
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: team-a, labels: {app: x}}, data: {k: v}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {generateName: generated-, annotations: {note: "1"}}, data: {}}
---
apiVersion: v1
kind: Secret
metadata: {name: token}
stringData: {password: hunter2}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx, ports: [{containerPort: 80, name: http}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: single, namespace: team-a}
spec: {containers: [{name: main, image: busybox, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {}
"""


def _created_one_by_one(documents: list[Any]) -> Cluster:
    """What creating each object of the documents (as kubectl create would, one request each) stores.

    Each goes the way of a ``POST``: the awaited pipeline, admission included (a load commits what nothing
    admits at once, without awaiting: the same objects must come of it).
    """
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(11))
    for doc in documents:
        for item in doc["items"] if doc["kind"] == "List" else [doc]:
            rtype = cluster.resource_for(item["apiVersion"], item["kind"])
            namespace = item["metadata"].get("namespace", "default") if rtype.namespaced else None
            pipeline.run_now(cluster.writes.create(rtype, namespace, item))
    return cluster


def test_a_loaded_object_is_stored_as_a_created_one(tmp_path: pathlib.Path) -> None:
    """A load stores each object byte for byte as its create request would (and is refused as one would be)."""
    path = tmp_path / "objects.yaml"
    path.write_text(_KINDS_MANIFEST)
    created = _created_one_by_one(parse_manifests(_KINDS_MANIFEST))
    loaded = Cluster(clock=ManualClock(), uids=SeededUids(11))
    assert loaded.load(iter_manifests([path])) == 11
    stored = [(key, obj) for key, obj in loaded.everything()]
    assert stored == list(created.everything())
    assert len(stored) > 11  # the cluster's own objects (its namespaces) are compared too
    for key, obj in stored:
        metadata = obj["metadata"]
        mine = loaded.stored(key, metadata.get("namespace"), metadata["name"])
        theirs = created.stored(key, metadata.get("namespace"), metadata["name"])
        assert mine is not None and theirs is not None and mine.raw == theirs.raw
        assert json.loads(mine.raw) == obj
    assert loaded.rv == created.rv

    denied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "forbidden-x"}}
    path.write_text(json.dumps(denied))
    with pytest.raises(ApiError) as loading:
        loaded.load(iter_manifests([path]))
    with pytest.raises(ApiError) as creating:
        created.create(created.resource("", "v1", "configmaps"), "default", denied)
    assert loading.value.to_status() == creating.value.to_status()
    assert loading.value.code == 422 and "no-forbidden-names" in loading.value.message


def test_a_policy_loaded_before_an_object_admits_it(tmp_path: pathlib.Path) -> None:
    """A load asks again whether anything admits its objects once it has loaded a policy's binding."""
    policy = [doc for doc in parse_manifests(_KINDS_MANIFEST) if "AdmissionPolicy" in doc["kind"]]
    denied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "forbidden-x"}}
    path = tmp_path / "objects.yaml"
    path.write_text("".join(f"---\n{json.dumps(doc)}\n" for doc in [*policy, configmap("fine"), denied]))
    cluster = Cluster()
    with pytest.raises(ApiError) as loading:
        cluster.load(iter_manifests([path]))
    assert loading.value.code == 422 and "no-forbidden-names" in loading.value.message
    assert [obj["metadata"]["name"] for obj in cluster.objects(("", "configmaps"))] == ["fine"]


def test_objects_that_nothing_admits_are_loaded_as_the_awaited_pipeline_creates_them(tmp_path: pathlib.Path) -> None:
    """Without an admission policy, a load commits each object at once: byte for byte what a POST would store."""
    documents = [doc for doc in parse_manifests(_KINDS_MANIFEST) if "AdmissionPolicy" not in doc["kind"]]
    path = tmp_path / "objects.yaml"
    path.write_text("".join(f"---\n{json.dumps(doc)}\n" for doc in documents))
    created = _created_one_by_one(documents)
    loaded = Cluster(clock=ManualClock(), uids=SeededUids(11))
    assert loaded.load(iter_manifests([path])) == 9
    assert not loaded.admission.active()
    stored = list(loaded.everything())
    assert stored == list(created.everything())
    for key, obj in stored:
        metadata = obj["metadata"]
        mine = loaded.stored(key, metadata.get("namespace"), metadata["name"])
        theirs = created.stored(key, metadata.get("namespace"), metadata["name"])
        assert mine is not None and theirs is not None and mine.raw == theirs.raw


def test_a_load_that_would_call_a_webhook_is_a_clear_error(tmp_path: pathlib.Path) -> None:
    """Loading calls no webhook (it writes synchronously): an object that one would admit stops the load, worded."""
    webhook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "checks"},
        "webhooks": [
            {
                "name": "configmaps.example.com",
                "clientConfig": {"url": "https://127.0.0.1:9/validate"},
                "rules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }
    path = tmp_path / "objects.yaml"
    path.write_text(f"{json.dumps(webhook)}\n---\n{json.dumps(configmap('a'))}\n")
    result = CliRunner().invoke(cli.main, ["serve", "--load", str(path), "--controllers", "none"])
    assert result.exit_code == 1
    assert "cannot load the manifests: an object would be admitted by an admission webhook" in result.output
