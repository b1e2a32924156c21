"""In-memory indices: what the operator knows about many objects, kept current by its watch streams.

A KopfExample names its team in ``spec.field``; the team's settings are the ConfigMaps labelled
``example.kopf.dev/team=<team>``. Instead of listing ConfigMaps through the API on every call, the
operator indexes them by team (``configmaps_by_team``) and looks them up in the handlers, which get
every index as a kwarg of the same name:

- ``team_settings`` (on creation and on changes of ``spec.field``) and ``refresh_settings`` (a timer)
  put the names of the team's ConfigMaps into the status: the index is complete before the first
  handler runs, and it follows the ConfigMaps as they come and go;
- ``teams`` is a probe: the liveness endpoint (``kopf run --liveness=URL``) reports the indexed
  ConfigMaps and KopfExamples per team.
"""

from typing import Any

import kopf

TEAM = "example.kopf.dev/team"


@kopf.index("configmaps", labels={TEAM: kopf.PRESENT})
def configmaps_by_team(name: str, labels: kopf.Labels, **_: Any) -> dict[str, str]:
    return {labels[TEAM]: name}


@kopf.index("kopfexamples")
def examples_by_team(name: str, spec: kopf.Spec, **_: Any) -> dict[str, str] | None:
    team = spec.get("field")
    return {team: name} if team else None  # None: not indexed


@kopf.on.create("kopfexamples")
@kopf.on.update("kopfexamples", field="spec.field")
def team_settings(spec: kopf.Spec, configmaps_by_team: kopf.Index[str, str], **_: Any) -> list[str]:
    return sorted(configmaps_by_team.get(str(spec.get("field", "")), []))


@kopf.timer("kopfexamples", interval=3, initial_delay=3)
def refresh_settings(
    spec: kopf.Spec, status: kopf.Status, configmaps_by_team: kopf.Index[str, str], patch: kopf.Patch, **_: Any
) -> None:
    names = sorted(configmaps_by_team.get(str(spec.get("field", "")), []))
    if status.get("team_settings") != names:
        patch.status["team_settings"] = names


@kopf.on.probe()
def teams(
    configmaps_by_team: kopf.Index[str, str], examples_by_team: kopf.Index[str, str], **_: Any
) -> dict[str, dict[str, int]]:
    names = set(configmaps_by_team) | set(examples_by_team)
    return {
        str(team): {
            "configmaps": len(configmaps_by_team.get(team, [])),
            "examples": len(examples_by_team.get(team, [])),
        }
        for team in sorted(names, key=str)
    }
