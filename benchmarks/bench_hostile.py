"""Hostile bodies against a served simulator: how fast each is refused, and how much the server grows.

Run: ``python benchmarks/bench_hostile.py [--repeat 5]``.

``kopf-sim serve`` runs in a subprocess (its memory is its own); each body is sent ``--repeat`` times over
HTTP, and the figures are the status, the best and worst wall time of the request, and the growth of the
server's resident memory (VmHWM, its peak, before and after all the repeats). The target: a 4xx in under
100 ms with less than 50 MB of growth, for the YAML alias bomb ("billion laughs", 446 bytes that expand
to 9**8 nodes) and its relatives (deep, wide, merge keys, as an apply patch), deep JSON and YAML, a
compression bomb, not-a-number values, and absurd continue tokens. ``/healthz`` is asked after each
body, to see that the server still answers at once.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

NS = "/api/v1/namespaces/default/configmaps"


def bomb(levels: int = 9, width: int = 9, *, kind: str = "list") -> bytes:
    lines = [b'l0: &l0 "lol"']
    for level in range(1, levels):
        refs = [b"*l%d" % (level - 1)] * width
        if kind == "list":
            body = b"[" + b", ".join(refs) + b"]"
        else:
            body = b"{" + b", ".join(b"k%d: %s" % (i, ref) for i, ref in enumerate(refs)) + b"}"
        lines.append(b"l%d: &l%d %s" % (level, level, body))
    return b"\n".join(lines) + b"\n"


def merge_bomb(levels: int = 30) -> bytes:
    lines = [b"m0: &m0 {a: 1, b: 2, c: 3}"]
    for level in range(1, levels):
        lines.append(b"m%d: &m%d {<<: [*m%d, *m0], x%d: %d}" % (level, level, level - 1, level, level))
    lines.append(b"all: [" + b", ".join([b"*m%d" % (levels - 1)] * 5000) + b"]")
    return b"\n".join(lines) + b"\n"


def cases() -> list[tuple[str, str, str, dict[str, str], bytes]]:
    yaml_h, apply_h = {"Content-Type": "application/yaml"}, {"Content-Type": "application/apply-patch+yaml"}
    json_h = {"Content-Type": "application/json"}
    token = base64.urlsafe_b64encode(b"[" * 3000).decode()
    return [
        ("alias bomb (YAML, 9 levels of 9)", "POST", NS, yaml_h, bomb()),
        ("alias bomb as an apply patch", "PATCH", f"{NS}/cm?fieldManager=m", apply_h, bomb()),
        ("alias bomb of maps", "POST", NS, yaml_h, bomb(kind="map")),
        ("alias bomb, 40 levels of 2", "POST", NS, yaml_h, bomb(levels=40, width=2)),
        ("alias bomb, 4 levels of 200", "POST", NS, yaml_h, bomb(levels=4, width=200)),
        ("merge-key bomb", "POST", NS, yaml_h, merge_bomb()),
        ("YAML nested 100,000 deep", "POST", NS, yaml_h, b"[" * 100_000),
        ("JSON nested 100,000 deep", "POST", NS, json_h, b"[" * 100_000 + b"]" * 100_000),
        ("JSON nested 900 deep", "POST", NS, json_h, b'{"a":' * 900 + b"1" + b"}" * 900),
        (
            "gzip bomb (100 MB of zeros)",
            "POST",
            NS,
            {**json_h, "Content-Encoding": "gzip"},
            gzip.compress(b"0" * 100_000_000),
        ),
        ("NaN", "POST", NS, json_h, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"},"data":NaN}'),
        ("continue token of 3,000 brackets", "GET", f"{NS}?continue={token}", json_h, b""),
        (
            "continue token with 1e999",
            "GET",
            f"{NS}?continue=" + base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":1e999,"start":"a"}').decode(),
            json_h,
            b"",
        ),
    ]


def peak_rss_mb(pid: int) -> float:
    text = pathlib.Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", text)
    assert match is not None
    return int(match.group(1)) / 1024


def send(url: str, method: str, headers: dict[str, str], body: bytes) -> tuple[int, float]:
    request = urllib.request.Request(url, data=body or None, method=method, headers=headers)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        error.read()
        status = error.code
    return status, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        server = subprocess.Popen(
            [sys.executable, "-m", "kopf_sim", "serve", "--kubeconfig", kubeconfig], stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            match = re.search(r"at (http://\S+)", server.stdout.readline())
            assert match is not None
            base = match.group(1)
            send(
                f"{base}{NS}",
                "POST",
                {"Content-Type": "application/json"},
                b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}',
            )
            print(
                f"{'case':38} {'bytes':>9} {'status':>6} {'best ms':>8} {'worst ms':>8} {'RSS MB':>16} "
                f"{'healthz ms':>10}"
            )
            worst_all = 0.0
            for name, method, path, headers, body in cases():
                before = peak_rss_mb(server.pid)
                timings, statuses = [], set()
                for _ in range(args.repeat):
                    status, seconds = send(f"{base}{path}", method, headers, body)
                    statuses.add(status)
                    timings.append(seconds)
                after = peak_rss_mb(server.pid)
                _, health = send(f"{base}/healthz", "GET", {}, b"")
                worst_all = max(worst_all, max(timings))
                print(
                    f"{name:38} {len(body):9} {','.join(map(str, sorted(statuses))):>6} "
                    f"{min(timings) * 1000:8.1f} {max(timings) * 1000:8.1f} "
                    f"{before:6.1f} -> {after:6.1f} {health * 1000:10.1f}"
                )
            print(f"worst request: {worst_all * 1000:.1f} ms; server peak RSS: {peak_rss_mb(server.pid):.1f} MB")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
