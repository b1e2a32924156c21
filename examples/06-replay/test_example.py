"""A production incident as a test: the recorded log of a live run, replayed into the operator under test."""

from pathlib import Path

HERE = Path(__file__).parent


async def test_deleted_while_the_repaint_was_retrying(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(HERE.parent / "crd.yaml")
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    replay = await kopf_cluster.replay(HERE / "incident.jsonl")  # at the recorded pace (virtual time in sim mode)
    assert [step.action for step in replay.steps] == ["create", "update", "update", "update", "update", "delete"]

    await kopf_cluster.wait_gone("kopfexamples", "flappy", timeout=30)  # the retrying repaint held nothing up
    await kopf_operator.stop()
    assert kopf_operator.exception is None
    assert "Handler 'repaint/spec.field' failed temporarily: The paint shop is busy" in kopf_operator.logs
    assert "Repainting" not in kopf_operator.logs  # deleted before the retry came
    assert "Scrapping flappy, last painted blue." in kopf_operator.logs
