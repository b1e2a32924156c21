import asyncio
import datetime

import pytest

from kopf._cogs.aiokits.clock import pin_epoch, utcnow

EPOCH = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


def test_outside_of_a_loop_it_is_the_real_time() -> None:
    before = datetime.datetime.now(datetime.UTC)
    assert before <= utcnow() <= datetime.datetime.now(datetime.UTC)


@pytest.mark.looptime
async def test_pinned_epoch_moves_with_the_loop_time() -> None:
    pin_epoch(EPOCH)
    assert utcnow() == EPOCH
    await asyncio.sleep(3600)
    assert utcnow() == EPOCH + datetime.timedelta(hours=1)


async def test_naive_epochs_are_taken_as_utc() -> None:
    pin_epoch(datetime.datetime(2030, 1, 1))
    assert utcnow().tzinfo is not None
    assert utcnow() - EPOCH < datetime.timedelta(seconds=5)
