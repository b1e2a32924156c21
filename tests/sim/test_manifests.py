"""Reading manifests for ``--load``: JSON documents parsed as JSON, YAML from the first other one on, one at a time."""

from __future__ import annotations

import json
import pathlib

import pytest

from kopf_sim.manifests import ManifestError, iter_manifests, parse_manifests, read_manifest
from kopf_sim.store.cluster import Cluster


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def test_json_documents_read_as_yaml_would(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "objects.yaml"
    pretty = json.dumps(configmap("b"), indent=2)
    path.write_text(f"---\n{json.dumps(configmap('a'))}\n---\n{pretty}\n---\n\n---\n{json.dumps(configmap('c'))}")
    assert read_manifest(path) == parse_manifests(path.read_text()) == [configmap(n) for n in "abc"]


def test_yaml_after_json_documents_is_read_as_yaml(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "objects.yaml"
    block = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: |\n    ---\n    v\n"
    path.write_text(f"{json.dumps(configmap('a'))}\n---\n{block}---\n{json.dumps(configmap('c'))}\n")
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
