"""How incident.jsonl was recorded: a live run of example.py, with a user flapping the colour and deleting.

Everything runs for real on this machine: ``kopf-sim serve`` as the cluster, ``kopf run`` as the
operator, ``kopf-sim record`` as the recorder, and kubectl as the user. Run it again with
``python examples/06-replay/record.py`` (about 15 seconds); it overwrites incident.jsonl.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
KUBECTL = shutil.which("kubectl") or "kubectl"
FLAPPY = (
    '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "flappy"}, "spec": {"field": "blue"}}'
)


def started(command: list[str], env: dict[str, str], ready: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        print(f"  | {line.rstrip()}")
        if ready in line:
            return process
    raise RuntimeError(f"{command[0]} did not start")


def main() -> None:
    log = HERE / "incident.jsonl"
    log.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}
        server = started(
            [str(BIN / "kopf-sim"), "serve", "--kubeconfig", str(kubeconfig), "--load", str(HERE.parent / "crd.yaml")],
            env,
            "Press Ctrl+C",
        )
        recorder = started(
            [str(BIN / "kopf-sim"), "record", "-r", "kopfexamples", "-n", "default", "-o", str(log)], env, "Recording"
        )
        operator = started(
            [str(BIN / "kopf"), "run", "--standalone", "--verbose", "-n", "default", str(HERE / "example.py")],
            env,
            "Serving the resource",
        )

        def kubectl(*args: str, pause: float) -> None:
            subprocess.run([KUBECTL, *args], input=FLAPPY, env=env, check=True, text=True)
            time.sleep(pause)

        kubectl("create", "-f", "-", pause=2)
        for colour in ["green", "blue", "green"]:  # the flapping, while the first repaint waits to be retried
            kubectl(
                "patch", "kopfexamples", "flappy", "--type=merge", "-p", f'{{"spec": {{"field": "{colour}"}}}}', pause=1
            )
        kubectl("delete", "kopfexamples", "flappy", "--wait=true", pause=1)
        for process in [recorder, operator, server]:
            process.send_signal(signal.SIGINT)
            output, _ = process.communicate(timeout=30)
            print("".join(f"  | {line}\n" for line in output.splitlines()), end="")
    print(f"Recorded: {log}")


if __name__ == "__main__":
    main()
