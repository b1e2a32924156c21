"""Decoding kubectl's protobuf request bodies, and kubectl's generator commands against ``kopf-sim serve``.

The bodies below were captured from kubectl v1.32 (``kubectl create ...`` against a server that dumped
the raw POST bodies); the expected objects are what ``kubectl ... --dry-run=client -o json`` prints.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_sim.http.protobuf import ProtobufError, UnknownKindError, decode_object, wire_fields

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

# kubectl create namespace ns-marker2
NAMESPACE = bytes.fromhex(
    "6b3873000a0f0a02763112094e616d65737061636512220a1a0a0a6e732d6d61726b65723212001a0022002a003200380042"
    "0012001a020a001a002200"
)
SECRET_GENERIC = bytes.fromhex(
    "6b3873000a0c0a0276311206536563726574123a0a170a077365632d67656e12001a0022002a0032003800420012100a0673"
    "65636b6579120673656376616c1a0d6d79747970652d6d61726b65721a002200"
)
CONFIGMAP_FROM_ENV = bytes.fromhex(
    "6b3873000a0f0a0276311209436f6e6669674d617012380a160a06636d2d656e7612001a0022002a00320038004200120e0a"
    "05656e766b311205656e767631120e0a05656e766b321205656e7676321a002200"
)
SERVICE_CLUSTERIP = bytes.fromhex(
    "6b3873000a0d0a027631120753657276696365129a010a230a057376632d6312001a0022002a003200380042005a0c0a0361"
    "707012057376632d63126f0a1e0a09353637382d38303830120354435018ae2c2207080010903f1a0028000a260a0b39392d"
    "6e616d65706f727412035443501863220e080110001a086e616d65706f72742800120c0a0361707012057376632d631a0022"
    "09436c757374657249503a00420052005a00600068001a020a001a002200"
)
ROLE = bytes.fromhex(
    "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c6512680a1b0a0b726f"
    "6c652d6d61726b657212001a0022002a00320038004200121e0a036765740a046c69737412001a04706f64732209726e2d6d"
    "61726b657212290a036765740a046c6973741204617070731a0b6465706c6f796d656e74732209726e2d6d61726b65721a00"
    "2200"
)
CLUSTERROLE_AGGREGATED = bytes.fromhex(
    "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c7573746572526f6c6512"
    "2f0a1c0a0c63726f6c652d6d61726b657212001a0022002a003200380042001a0f0a0d0a0b0a036167671204747275651a00"
    "2200"
)
CLUSTERROLEBINDING = bytes.fromhex(
    "6b3873000a320a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311212436c7573746572526f6c6542"
    "696e64696e6712cc010a1a0a0a6372622d6d61726b657212001a0022002a00320038004200122a0a04557365721219726261"
    "632e617574686f72697a6174696f6e2e6b38732e696f1a0563757365722200122c0a0547726f75701219726261632e617574"
    "686f72697a6174696f6e2e6b38732e696f1a066367726f75702200121c0a0e536572766963654163636f756e7412001a0363"
    "736122036e73311a360a19726261632e617574686f72697a6174696f6e2e6b38732e696f120b436c7573746572526f6c651a"
    "0c63726f6c652d6d61726b65721a002200"
)
DEPLOYMENT = bytes.fromhex(
    "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412e2010a2d0a0a6465702d6d61726b657212001a002200"
    "2a003200380042005a110a03617070120a6465702d6d61726b657212a201080712130a110a03617070120a6465702d6d6172"
    "6b65721a80010a230a0012001a0022002a003200380042005a110a03617070120a6465702d6d61726b65721259123b0a0a69"
    "6d672d6d61726b6572120c696d672d6d61726b65723a312a00320b0a00100018913f22002a0042006a007200800100880100"
    "900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c080010001800"
    "2000280038001a002200"
)
JOB_FROM_RICH_CRONJOB = bytes.fromhex(
    "6b3873000a0f0a0862617463682f763112034a6f6212e90c0aa2010a076a2d726963683412001a0022002a00320038004200"
    "5a0b0a036a746c12046a746c76622b0a2163726f6e6a6f622e6b756265726e657465732e696f2f696e7374616e7469617465"
    "12066d616e75616c620b0a036a746112046a7461766a420a0743726f6e4a6f621a057269636834222431386130346261382d"
    "626539302d343634622d393433322d6436653930363637333666342a0862617463682f7631300112b70b08f30710f40718f5"
    "0722260a0b0a0373656c120473656c7612170a0565786b65791202496e1a04657876311a0465787632280132e20a0ac0010a"
    "08746d706c6e616d651208746d706c67656e2d1a06746d706c6e73220c2f73656c662d6d61726b65722a0f746d706c2d7569"
    "642d6d61726b6572320972762d6d61726b657238ae08420808a5bbb5f00510004a0808f2c1e88006100050af085a0b0a0373"
    "656c120473656c76620d0a0474616e6e120574616e6e766a2e0a074f776e4b696e641a076f776e6e616d65220e6f776e2d75"
    "69642d6d61726b65722a066f776e2f763130013800721266696e2e6578616d706c652f6d61726b6572129c090a1c0a07762d"
    "656d7074791211120f0a064d656d6f727912050a033147690a260a04762d636d121e9a011b0a070a05636d726566120b0a02"
    "696b1202697018800218a40320010a270a05762d736563121e321c0a06736563726566120d0a0373696b1203736970188102"
    "18800320000a150a05762d707663120c520a0a0670766372656610010a230a06762d686f737412190a170a0a2f68702d6d61"
    "726b657212094469726563746f72791282050a05636e616d65120663696d6167651a0463636d642204636172672a0a2f7764"
    "2d6d61726b6572321b0a05706e616d6510910818900822035544502a07312e312e312e313a0e0a04454e56311206656e7676"
    "616c3a1f0a04454e563212001a150a130a027631120d6d657461646174612e6e616d653a210a04454e563312001a1722150a"
    "090a07736b726e616d651206736b726b657918013a210a04454e563412001a171a150a0a0a08636d6b726e616d651207636d"
    "6b726b65793a270a04454e563512001a1d121b0a077266636e616d65120a6c696d6974732e6370751a040a02316d42420a0e"
    "0a0363707512070a05313530306d0a0f0a066d656d6f727912050a03324769120d0a0363707512060a043235306d12100a06"
    "6d656d6f727912060a0436344d694a210a04762d636d10011a0a2f6d702d6d61726b6572220973702d6d61726b6572320052"
    "450a31122f0a0a2f687a2d6d61726b657212070800109a081a001a06687a686f73742204485454502a0a0a0368686e120368"
    "6876109b08189c08209d08289e08309f0838a0085a180a0c0a0a0a0870726f6265636d641000180020002800300062260a14"
    "12120a032f70731207080010a1081a001a002200120e0a0c0a0a70726573746f70636d646a0f2f746d702f746d702d6d6172"
    "6b65727206416c776179737a200a100a094e45545f41444d494e1203414c4c100120a40828013001380040a5088001018801"
    "019001019a01120a045046585f120a0a060a046566636d10019a010d0a001a090a070a056566736563a2011546616c6c6261"
    "636b546f4c6f67734f6e4572726f72b2012a0a1e1a1c0a11080110001a0b746370706f72746e616d651207746370686f7374"
    "100018002000280030001a094f6e4661696c75726520fc0728fd07320d646e73706f6c2d6d61726b65723a0a0a036e736b12"
    "036e7376420d73616e616d652d6d61726b65724a0973612d6d61726b6572520f6e6f64656e616d652d6d61726b6572580160"
    "016801721f1086081801208908208a082888083087084a0c66736763702d6d61726b65727a0c0a0a6970732d6d61726b6572"
    "82010f686f73746e616d652d6d61726b65728a0110737562646f6d61696e2d6d61726b65729a010c73636865642d6d61726b"
    "6572a2012a0a0b696e69742d6d61726b65721207696e6974696d672a0042006a007200800100880100900100a20100a80100"
    "b201260a06746f6c6b65791205457175616c1a06746f6c76616c220a4e6f5363686564756c65288b08ba01140a07392e392e"
    "392e39120968612d6d61726b6572c2010b7072696f2d6d61726b6572c801fe07d80101ea010a7274632d6d61726b6572f001"
    "00fa010e707265656d70742d6d61726b6572980201a8020038f60740f7074a07496e6465786564500160f80768f907720646"
    "61696c65641a082000280030003a001a002200"
)


# -- The decoder on captured bodies ------------------------------------------------------------------


def test_namespace() -> None:
    assert decode_object(NAMESPACE) == {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": "ns-marker2", "creationTimestamp": None},
        "spec": {},
        "status": {},
    }


def test_secret_data_is_base64_and_type_is_kept() -> None:
    assert decode_object(SECRET_GENERIC) == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "sec-gen", "creationTimestamp": None},
        "data": {"seckey": "c2VjdmFs"},
        "type": "mytype-marker",
    }


def test_configmap_data() -> None:
    assert decode_object(CONFIGMAP_FROM_ENV) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "cm-env", "creationTimestamp": None},
        "data": {"envk1": "envv1", "envk2": "envv2"},
    }


def test_service_ports_with_int_and_string_target_ports() -> None:
    assert decode_object(SERVICE_CLUSTERIP) == {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {"name": "svc-c", "creationTimestamp": None, "labels": {"app": "svc-c"}},
        "spec": {
            "ports": [
                {"name": "5678-8080", "protocol": "TCP", "port": 5678, "targetPort": 8080},
                {"name": "99-nameport", "protocol": "TCP", "port": 99, "targetPort": "nameport"},
            ],
            "selector": {"app": "svc-c"},
            "type": "ClusterIP",
        },
        "status": {"loadBalancer": {}},
    }


def test_role_rules_keep_empty_api_group() -> None:
    rule = {"verbs": ["get", "list"], "resources": ["pods"], "resourceNames": ["rn-marker"]}
    assert decode_object(ROLE) == {
        "kind": "Role",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "role-marker", "creationTimestamp": None},
        "rules": [{**rule, "apiGroups": [""]}, {**rule, "apiGroups": ["apps"], "resources": ["deployments"]}],
    }


def test_aggregated_clusterrole_has_null_rules() -> None:
    assert decode_object(CLUSTERROLE_AGGREGATED) == {
        "kind": "ClusterRole",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "crole-marker", "creationTimestamp": None},
        "rules": None,
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]},
    }


def test_clusterrolebinding_subjects_and_role_ref() -> None:
    group = "rbac.authorization.k8s.io"
    assert decode_object(CLUSTERROLEBINDING) == {
        "kind": "ClusterRoleBinding",
        "apiVersion": f"{group}/v1",
        "metadata": {"name": "crb-marker", "creationTimestamp": None},
        "subjects": [
            {"kind": "User", "apiGroup": group, "name": "cuser"},
            {"kind": "Group", "apiGroup": group, "name": "cgroup"},
            {"kind": "ServiceAccount", "name": "csa", "namespace": "ns1"},
        ],
        "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": "crole-marker"},
    }


def test_deployment() -> None:
    labels = {"app": "dep-marker"}
    assert decode_object(DEPLOYMENT) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "dep-marker", "creationTimestamp": None, "labels": labels},
        "spec": {
            "replicas": 7,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "img-marker",
                            "image": "img-marker:1",
                            "ports": [{"containerPort": 8081}],
                            "resources": {},
                        }
                    ]
                },
            },
            "strategy": {},
        },
        "status": {},
    }


def test_job_from_a_rich_cronjob() -> None:
    job = decode_object(JOB_FROM_RICH_CRONJOB)
    assert job["kind"] == "Job"
    assert job["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual", "jta": "jtav"}
    assert job["metadata"]["ownerReferences"][0]["controller"] is True
    spec = job["spec"]
    assert {
        k: spec[k]
        for k in (
            "parallelism",
            "completions",
            "backoffLimit",
            "completionMode",
            "suspend",
            "manualSelector",
            "podReplacementPolicy",
        )
    } == {
        "parallelism": 1011,
        "completions": 1012,
        "backoffLimit": 1014,
        "completionMode": "Indexed",
        "suspend": True,
        "manualSelector": True,
        "podReplacementPolicy": "Failed",
    }
    assert spec["selector"]["matchExpressions"] == [{"key": "exkey", "operator": "In", "values": ["exv1", "exv2"]}]
    assert spec["template"]["metadata"] == {
        "name": "tmplname",
        "generateName": "tmplgen-",
        "namespace": "tmplns",
        "selfLink": "/self-marker",
        "uid": "tmpl-uid-marker",
        "resourceVersion": "rv-marker",
        "generation": 1070,
        "creationTimestamp": "2020-01-02T03:04:05Z",
        "deletionTimestamp": "2021-02-03T04:05:06Z",
        "deletionGracePeriodSeconds": 1071,
        "labels": {"sel": "selv"},
        "annotations": {"tann": "tannv"},
        "ownerReferences": [
            {
                "apiVersion": "own/v1",
                "kind": "OwnKind",
                "name": "ownname",
                "uid": "own-uid-marker",
                "controller": True,
                "blockOwnerDeletion": False,
            }
        ],
        "finalizers": ["fin.example/marker"],
    }
    pod = spec["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False  # a pointer: false is kept
    assert pod["enableServiceLinks"] is False
    assert pod["hostNetwork"] is True and pod["priority"] == 1022
    assert pod["securityContext"]["supplementalGroups"] == [1033, 1034]
    assert pod["volumes"][:3] == [
        {"name": "v-empty", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        {
            "name": "v-cm",
            "configMap": {
                "name": "cmref",
                "items": [{"key": "ik", "path": "ip", "mode": 256}],
                "defaultMode": 420,
                "optional": True,
            },
        },
        {
            "name": "v-sec",
            "secret": {
                "secretName": "secref",
                "items": [{"key": "sik", "path": "sip", "mode": 257}],
                "defaultMode": 384,
                "optional": False,
            },
        },
    ]
    container = pod["containers"][0]
    assert container["resources"] == {
        "limits": {"cpu": "1500m", "memory": "2Gi"},
        "requests": {"cpu": "250m", "memory": "64Mi"},
    }
    assert container["livenessProbe"] == {
        "httpGet": {
            "path": "/hz-marker",
            "port": 1050,
            "host": "hzhost",
            "scheme": "HTTP",
            "httpHeaders": [{"name": "hhn", "value": "hhv"}],
        },
        "initialDelaySeconds": 1051,
        "timeoutSeconds": 1052,
        "periodSeconds": 1053,
        "successThreshold": 1054,
        "failureThreshold": 1055,
        "terminationGracePeriodSeconds": 1056,
    }
    assert container["startupProbe"] == {"tcpSocket": {"port": "tcpportname", "host": "tcphost"}}
    assert container["securityContext"] == {
        "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
        "privileged": True,
        "runAsUser": 1060,
        "runAsGroup": 1061,
        "runAsNonRoot": True,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
    }
    assert container["env"][2:] == [
        {"name": "ENV3", "valueFrom": {"secretKeyRef": {"name": "skrname", "key": "skrkey", "optional": True}}},
        {"name": "ENV4", "valueFrom": {"configMapKeyRef": {"name": "cmkrname", "key": "cmkrkey"}}},
        {
            "name": "ENV5",
            "valueFrom": {"resourceFieldRef": {"containerName": "rfcname", "resource": "limits.cpu", "divisor": "1m"}},
        },
    ]
    assert container["envFrom"] == [
        {"prefix": "PFX_", "configMapRef": {"name": "efcm", "optional": True}},
        {"secretRef": {"name": "efsec"}},
    ]
    assert container["lifecycle"] == {
        "postStart": {"httpGet": {"path": "/ps", "port": 1057}},
        "preStop": {"exec": {"command": ["prestopcmd"]}},
    }
    assert (container["stdin"], container["stdinOnce"], container["tty"]) == (True, True, True)


def test_wire_fields_generic() -> None:
    # field 1 varint 150, field 2 "hi", field 3 fixed32, field 4 fixed64
    data = bytes.fromhex("089601") + b"\x12\x02hi" + b"\x1d\x01\x00\x00\x00" + b"\x21" + (2).to_bytes(8, "little")
    assert list(wire_fields(data)) == [(1, 0, 150), (2, 2, b"hi"), (3, 5, 1), (4, 1, 2)]


def test_negative_ints_and_unknown_fields() -> None:
    # A ServiceAccount with an unknown field 99 in metadata and a negative generation (10-byte varint).
    meta = b"\x0a\x02sa" + b"\x38" + bytes.fromhex("ffffffffffffffffff01") + b"\x98\x06\x05"
    raw = b"\x0a" + bytes([len(meta)]) + meta
    envelope = b"\x0a\x14\x0a\x02v1\x12\x0eServiceAccount" + b"\x12" + bytes([len(raw)]) + raw
    assert decode_object(b"k8s\x00" + envelope) == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "sa", "generation": -1, "creationTimestamp": None},
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{}", "magic"),
        (b"k8s\x00\x0a", "truncated"),
        (b"k8s\x00\x0a\x05\x0a\x02v1", "exceeds"),
        (b"k8s\x00\x0b", "wire type"),
        (b"k8s\x00\x12\x00", "apiVersion/kind"),
        (b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x03\x1a\x01\x08", "truncated varint"),
    ],
)
def test_malformed_bodies(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        decode_object(body)


def test_wrong_wire_type_for_a_known_field() -> None:
    raw = b"\x0a\x02\x08\x01"  # metadata.name as a varint
    envelope = b"\x0a\x14\x0a\x02v1\x12\x0eServiceAccount\x12" + bytes([len(raw)]) + raw
    with pytest.raises(ProtobufError, match=r"metadata\.name: expected a length-delimited"):
        decode_object(b"k8s\x00" + envelope)


def test_unknown_kind() -> None:
    with pytest.raises(UnknownKindError, match="Endpoints"):
        decode_object(b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Endpoints\x12\x00")


# -- kubectl's generator commands against `kopf-sim serve` ----------------------------------------


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("kubectl") / "kubeconfig"
    command = [sys.executable, "-m", "kopf_sim", "serve", "--port", "0", "--kubeconfig", str(path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # "Serving a simulated Kubernetes API at ..." once ready
        assert "Serving" in line, line
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield path
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def kubectl(kubeconfig: Path, *args: str, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=30, cwd=cwd
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def get(kubeconfig: Path, *args: str) -> Any:
    return json.loads(kubectl(kubeconfig, "get", *args, "-o", "json"))


def test_kubectl_create_namespace_configmap_secret_serviceaccount(kubeconfig: Path, tmp_path: Path) -> None:
    (tmp_path / "blob").write_bytes(b"\x00\xffbinary")
    kubectl(kubeconfig, "create", "namespace", "pb-ns")
    kubectl(
        kubeconfig,
        "create",
        "configmap",
        "pb-cm",
        "-n",
        "pb-ns",
        "--from-literal=a=b",
        "--from-file=blob=blob",
        cwd=tmp_path,
    )
    kubectl(kubeconfig, "create", "secret", "generic", "pb-secret", "-n", "pb-ns", "--from-literal=k=v")
    kubectl(
        kubeconfig,
        "create",
        "secret",
        "docker-registry",
        "pb-reg",
        "-n",
        "pb-ns",
        "--docker-server=srv",
        "--docker-username=u",
        "--docker-password=p",
    )
    kubectl(kubeconfig, "create", "serviceaccount", "pb-sa", "-n", "pb-ns")
    assert get(kubeconfig, "namespace", "pb-ns")["metadata"]["name"] == "pb-ns"
    cm = get(kubeconfig, "configmap", "pb-cm", "-n", "pb-ns")
    assert cm["data"] == {"a": "b"} and cm["binaryData"] == {"blob": "AP9iaW5hcnk="}
    secret = get(kubeconfig, "secret", "pb-secret", "-n", "pb-ns")
    assert secret["data"] == {"k": "dg=="}
    assert get(kubeconfig, "secret", "pb-reg", "-n", "pb-ns")["type"] == "kubernetes.io/dockerconfigjson"
    assert get(kubeconfig, "serviceaccount", "pb-sa", "-n", "pb-ns")["metadata"]["namespace"] == "pb-ns"


def test_kubectl_create_workloads(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "create", "deployment", "pb-deploy", "--image=nginx:1", "--replicas=3", "--port=80")
    kubectl(kubeconfig, "create", "job", "pb-job", "--image=busybox", "--", "echo", "hi")
    kubectl(kubeconfig, "create", "cronjob", "pb-cron", "--image=busybox", "--schedule=*/5 * * * *", "--", "date")
    kubectl(kubeconfig, "create", "job", "pb-manual", "--from=cronjob/pb-cron")
    deploy = get(kubeconfig, "deployment", "pb-deploy")
    assert deploy["spec"]["replicas"] == 3
    assert deploy["spec"]["selector"] == {"matchLabels": {"app": "pb-deploy"}}
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["ports"]) == ("nginx:1", [{"containerPort": 80, "protocol": "TCP"}])
    job = get(kubeconfig, "job", "pb-job")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert get(kubeconfig, "cronjob", "pb-cron")["spec"]["schedule"] == "*/5 * * * *"
    manual = get(kubeconfig, "job", "pb-manual")
    assert manual["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert manual["metadata"]["ownerReferences"][0]["name"] == "pb-cron"


def test_kubectl_create_services(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "create", "service", "clusterip", "pb-c", "--tcp=80:http")
    kubectl(kubeconfig, "create", "service", "nodeport", "pb-n", "--tcp=81:8081", "--node-port=30081")
    kubectl(kubeconfig, "create", "service", "loadbalancer", "pb-l", "--tcp=82:8082")
    kubectl(kubeconfig, "create", "service", "externalname", "pb-e", "--external-name=db.example.com")
    port = get(kubeconfig, "service", "pb-c")["spec"]["ports"][0]
    assert (port["port"], port["targetPort"]) == (80, "http")
    assert get(kubeconfig, "service", "pb-n")["spec"]["ports"][0]["nodePort"] == 30081
    assert get(kubeconfig, "service", "pb-l")["spec"]["type"] == "LoadBalancer"
    assert get(kubeconfig, "service", "pb-e")["spec"]["externalName"] == "db.example.com"


def test_kubectl_create_rbac(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "create", "role", "pb-role", "--verb=get", "--verb=list", "--resource=deployments.apps")
    kubectl(kubeconfig, "create", "clusterrole", "pb-crole", "--verb=get", "--non-resource-url=/healthz")
    kubectl(kubeconfig, "create", "rolebinding", "pb-rb", "--role=pb-role", "--serviceaccount=default:builder")
    kubectl(kubeconfig, "create", "clusterrolebinding", "pb-crb", "--clusterrole=pb-crole", "--group=devs")
    assert get(kubeconfig, "role", "pb-role")["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"]}
    ]
    assert get(kubeconfig, "clusterrole", "pb-crole")["rules"] == [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]
    rb = get(kubeconfig, "rolebinding", "pb-rb")
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": "builder", "namespace": "default"}]
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pb-role"}
    crb = get(kubeconfig, "clusterrolebinding", "pb-crb")
    assert crb["subjects"] == [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}]


def test_kubectl_debug_copy_to(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "run", "pb-pod", "--image=nginx", "--labels=app=pb")
    kubectl(
        kubeconfig,
        "debug",
        "pb-pod",
        "--copy-to=pb-pod-copy",
        "--image=busybox",
        "--container=dbg",
        "--attach=false",
        "--profile=general",
        "--",
        "sleep",
        "1",
    )
    copy = get(kubeconfig, "pod", "pb-pod-copy")
    assert [c["name"] for c in copy["spec"]["containers"]] == ["pb-pod", "dbg"]


@pytest.mark.parametrize(
    ("body", "code", "reason"),
    [
        (b"k8s\x00\x0a\xff", 400, "BadRequest"),
        (b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Endpoints\x12\x00", 415, "UnsupportedMediaType"),
    ],
)
def test_undecodable_and_unsupported_bodies(kubeconfig: Path, body: bytes, code: int, reason: str) -> None:
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    request = urllib.request.Request(
        f"{server}/api/v1/namespaces/default/configmaps",
        data=body,
        method="POST",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    status = json.loads(info.value.read())
    assert (info.value.code, status["code"], status["reason"]) == (code, code, reason)
    if code == 415:
        assert "application/json" in status["message"]
