"""
The scenarios of the differential harness: which operator, which actions, what to wait for.

Every wait names what it waits for; the actions are HTTP requests to the served cluster.
Each scenario is short (seconds) and its outcome must not depend on timing beyond what it waits for.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.compat.harness import Context, Scenario, Start, Stop, Wait, kex_path


def kex(name: str, spec: Mapping[str, Any] | None = None, *, labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None, namespace: str = 'default') -> dict[str, Any]:
    metadata: dict[str, Any] = {'name': name, 'namespace': namespace}
    if labels:
        metadata['labels'] = dict(labels)
    if annotations:
        metadata['annotations'] = dict(annotations)
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': metadata, 'spec': dict(spec or {})}


def create(body: Mapping[str, Any]) -> Any:
    def step(ctx: Context) -> Any:
        return ctx.cluster.request('POST', kex_path(body['metadata'].get('namespace', 'default')), body)
    return step


def patch(name: str, body: Mapping[str, Any], namespace: str = 'default') -> Any:
    def step(ctx: Context) -> Any:
        return ctx.cluster.request('PATCH', kex_path(namespace, name), body,
                                   content_type='application/merge-patch+json')
    return step


def delete(name: str, namespace: str = 'default') -> Any:
    def step(ctx: Context) -> Any:
        return ctx.cluster.request('DELETE', kex_path(namespace, name))
    return step


def gone(name: str, namespace: str = 'default') -> Wait:
    return Wait(lambda ctx: ctx.cluster.get(kex_path(namespace, name)) is None, f"{name} is gone")


def called(fn: str, count: int = 1, **match: Any) -> Wait:
    return Wait(lambda ctx: ctx.called(fn, count, **match), f"{fn} called {count}x with {match}")


def has_status(name: str, key: str, namespace: str = 'default') -> Wait:
    def condition(ctx: Context) -> bool:
        body = ctx.cluster.get(kex_path(namespace, name)) or {}
        return key in (body.get('status') or {})
    return Wait(condition, f"{name} has status.{key}")


def logged(text: str) -> Wait:
    def condition(ctx: Context) -> bool:
        return ctx.run is not None and text in ctx.run.log_path.read_text(errors='replace')
    return Wait(condition, f"logged {text!r}")


SCENARIOS: list[Scenario] = [
    Scenario(
        name='handlers',
        operator='op_handlers.py',
        steps=[
            create(kex('pre', {'field': 'existing'})),
            Start(),
            has_status('pre', 'create_fn'),
            create(kex('h1', {'field': 'one'})),
            has_status('h1', 'create_fn'),
            called('update_fn', obj='h1'),  # the label added by create_fn is a change too
            patch('h1', {'spec': {'field': 'two'}}),
            called('update_fn', obj='h1', new={'field': 'two'}),
            patch('h1', {'status': {'unrelated': 'x'}}),
            logged('[default/h1] Something has changed, but we are not interested'),
            delete('h1'),
            gone('h1'),
            Stop(),
        ],
        objects=[kex_path('default', 'pre'), kex_path('default', 'h1')],
    ),
]

SCENARIOS += [
    Scenario(
        name='restarts',
        operator='op_handlers.py',
        steps=[
            Start(),
            create(kex('r1', {'field': 'one'})),
            create(kex('r2', {'field': 'one'})),
            has_status('r1', 'create_fn'),
            has_status('r2', 'create_fn'),
            Stop(),
            patch('r1', {'spec': {'field': 'changed-while-down'}}),
            delete('r2'),
            Start(),
            has_status('r1', 'update_fn'),
            gone('r2'),
            Stop(),
        ],
        objects=[kex_path('default', 'r1'), kex_path('default', 'r2')],
    ),
]

SCENARIOS += [
    Scenario(
        name='resuming',
        operator='op_resume.py',
        steps=[
            Start(),
            create(kex('mid1')),
            called('second', obj='mid1', retry=0),
            Stop(),
            Start(),
            has_status('mid1', 'second'),
            logged('Creation is processed'),
            Stop(),
            Start(),
            called('resumed', obj='mid1'),
            called('create_or_resume', 2, obj='mid1'),
            Stop(),
        ],
        objects=[kex_path('default', 'mid1')],
    ),
]

def _events_count(count: int) -> Wait:
    def condition(ctx: Context) -> bool:
        return len((ctx.cluster.get('/api/v1/namespaces/default/events') or {}).get('items', [])) >= count
    return Wait(condition, f"{count} events posted", timeout=10)


for _suffix, _env in [('', {}), ('-loggers', {'COMPAT_POSTING_LOGGERS': '1'}),
                      ('-warnings', {'COMPAT_POSTING_LOGGERS': '1', 'COMPAT_POSTING_LEVEL': '30'})]:
    SCENARIOS.append(Scenario(
        name=f'events{_suffix}',
        operator='op_events.py',
        env=_env,
        steps=[
            Start(),
            create(kex('e1')),
            has_status('e1', 'create_fn'),
            _events_count(4),
            Wait(lambda ctx: False, 'a second for the events to be posted', timeout=1.5),
            Stop(),
        ],
        objects=[kex_path('default', 'e1')],
    ))

SCENARIOS += [
    Scenario(
        name='errors',
        operator='op_errors.py',
        steps=[
            Start(),
            create(kex('err1')),
            called('temporary', obj='err1', retry=2),
            called('arbitrary', obj='err1', retry=1),
            called('timing-out', obj='err1', retry=1),
            called('temporary-retries', obj='err1', retry=1),
            called('arbitrary-timeout', obj='err1', retry=1),
            logged('Creation is processed'),
            patch('err1', {'spec': {'field': 'changed'}}),
            has_status('err1', 'default-backoff'),
            Stop(),
        ],
        objects=[kex_path('default', 'err1')],
    ),
]

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
