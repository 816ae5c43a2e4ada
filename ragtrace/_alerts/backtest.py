"""Replay timestamped verdicts through the Prometheus rules; every alert episode, with times.

::

    result = backtest(read_verdicts(open("verdicts.jsonl", "rb")), rule_files(), step=65)
    result["alerts"]   # [{"alertname", "labels", "pending_at", "firing_at", "resolved_at"}]

The verdicts become the counters the exporter would have served, scraped every ``step``
seconds (``ragtrace._alerts.series``); promtool evaluates the rules over them every ``step``
seconds and reports when each ``ALERTS`` series appeared and went away
(``ragtrace._alerts.promtool``). ``episodes`` turns those changes into one entry per episode:
an alert (``alertname`` and its labels) going pending, maybe firing, maybe resolved, in unix
seconds from ``evaluated_from`` (the first evaluation) to ``evaluated_to`` (the last). An alert
without ``for`` is pending and firing at the same evaluation; one still active at the last
evaluation has ``resolved_at`` null; one that stopped pending before it fired has ``firing_at``
null.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace._alerts.promtool import Change, PromtoolError, alert_changes
from ragtrace._alerts.series import sample
from ragtrace._alerts.verdicts import Verdict

DEFAULT_STEP_S = 65
"""The default step: at 60 s a 7-day baseline (``[7d]``) reads 10,081 samples, more than the
10,000 promtool allows in one query; at 65 s it reads 9,305, so a full week replays."""
STATES = ("pending", "firing")

_Key = tuple[str, tuple[tuple[str, str], ...]]  # alertname, the alert's other labels


@dataclass(slots=True)
class Episode:
    """One alert from going pending to being resolved (unix seconds; None: not reached)."""

    alertname: str
    labels: dict[str, str]
    pending_at: int
    firing_at: int | None = None
    resolved_at: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "alertname": self.alertname,
            "labels": dict(sorted(self.labels.items())),
            "pending_at": self.pending_at,
            "firing_at": self.firing_at,
            "resolved_at": self.resolved_at,
        }


def backtest(
    verdicts: Sequence[Verdict],
    rule_files: Sequence[Path],
    step: int = DEFAULT_STEP_S,
    promtool: str | None = None,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """Every alert episode of ``rule_files`` over ``verdicts`` (not empty), as JSON.

    Raises:
        ValueError: No verdicts, or a step under 1 s.
        RulesError: The rules do not load or fail to evaluate.
        PromtoolError: promtool is missing or failed.
    """
    if not verdicts:
        raise ValueError("no verdicts to replay")
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"step must be a whole number of seconds >= 1, got {step!r}")
    sampled = sample(verdicts, step)
    changes = alert_changes(sampled, rule_files, promtool=promtool, timeout_s=timeout_s)
    found = episodes(changes, sampled.start)
    return {
        "evaluated_from": sampled.start,
        "evaluated_to": sampled.end,
        "step_s": step,
        "verdicts": {"read": len(verdicts), "replayed": sampled.replayed},
        "rule_files": [str(f) for f in rule_files],
        "alerts": [e.as_json() for e in found],
    }


def episodes(changes: Iterable[Change], start: int) -> list[Episode]:
    """The episodes ``changes`` (in time order, ``at`` in seconds after ``start``) make.

    Raises:
        PromtoolError: The changes contradict each other (a series that went away without
            having appeared, an alert pending and firing at once).
    """
    by_time: dict[int, list[Change]] = {}
    for change in changes:
        by_time.setdefault(change.at, []).append(change)
    states: dict[_Key, str] = {}  # alert -> pending | firing, after the last evaluation
    open_: dict[_Key, Episode] = {}
    done: list[Episode] = []
    for at in sorted(by_time):
        now = start + at
        before = dict(states)
        keyed = [(change, *_key(change)) for change in by_time[at]]
        for change, key, state in keyed:
            if not change.appeared:
                if before.get(key) != state:
                    raise _contradiction(change, "went away without having appeared")
                del states[key]
        for change, key, state in keyed:
            if change.appeared:
                if key in states:
                    raise _contradiction(change, f"appeared while {states[key]}")
                states[key] = state
        for key in before.keys() | states.keys():
            old, new = before.get(key), states.get(key)
            if old == new:
                continue
            episode = open_.get(key)
            if episode is not None and (new is None or new == "pending"):
                episode.resolved_at = now  # gone, or firing -> pending: a new episode
                done.append(open_.pop(key))
                episode = None
            if new is None:
                continue
            if episode is None:
                episode = open_[key] = Episode(key[0], dict(key[1]), pending_at=now)
            if new == "firing":
                episode.firing_at = now
    done.extend(open_.values())
    return sorted(done, key=lambda e: (e.pending_at, e.alertname, sorted(e.labels.items())))


def _key(change: Change) -> tuple[_Key, str]:
    labels = dict(change.labels)
    name = labels.pop("alertname", "")
    state = labels.pop("alertstate", "")
    if not name or state not in STATES:
        raise _contradiction(change, "is not an alert (alertname, alertstate pending|firing)")
    return (name, tuple(sorted(labels.items()))), state


def _contradiction(change: Change, what: str) -> PromtoolError:
    return PromtoolError(f"promtool's report is inconsistent: {change.labels} {what}")
