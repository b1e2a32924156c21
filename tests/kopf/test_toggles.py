import asyncio

from kopf._cogs.aiokits.toggles import Toggle, ToggleSet


async def test_toggle_states_and_waiting() -> None:
    toggle = Toggle(name="paused")
    assert toggle.is_off() and not toggle
    waiter = asyncio.create_task(toggle.wait_for(True))
    await asyncio.sleep(0)
    assert not waiter.done()
    await toggle.turn_to(True)
    assert await waiter is True
    assert toggle.is_on() and bool(toggle)
    assert await toggle.wait_for(True) is True  # already in that state


async def test_toggle_set_any_and_all() -> None:
    anyset, allset = ToggleSet(any), ToggleSet(all)
    a1, a2 = await anyset.make_toggle(name="a1"), await anyset.make_toggle(name="a2")
    b1 = await allset.make_toggle(True)
    b2 = await allset.make_toggle(False)
    assert anyset.is_off() and allset.is_off()
    waiter = asyncio.create_task(anyset.wait_for(True))
    await a2.turn_to(True)
    assert await waiter is True
    await b2.turn_to(True)
    assert allset.is_on()
    await allset.drop_toggle(b2)
    await b1.turn_to(False)
    assert allset.is_off() and len(allset) == 1
    assert [t.name for t in anyset] == ["a1", "a2"]
    assert a1.is_off()
