"""The catalogue in tiers: every evaluator has one, the online suite is online, and registered
evaluators choose theirs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragtrace._offline.listing import format_listing
from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators._looping import LoopingDetection


def test_every_builtin_has_one_tier_and_the_tiers_cover_the_names() -> None:
    grouped = registry.by_tier()
    assert list(grouped) == list(registry.TIERS) == ["online", "offline", "judge"]
    flat = [n for names in grouped.values() for n in names]
    assert sorted(flat) == registry.names() and len(flat) == len(set(flat))
    for name in registry.BUILTIN:
        assert registry.tier(name) in registry.TIERS


def test_the_default_suite_is_online_and_judges_are_judges() -> None:
    assert set(registry.ONLINE_SUITE) <= set(registry.by_tier()[registry.ONLINE])
    assert {n for n in registry.BUILTIN if n.startswith("judge_")} == set(
        registry.by_tier()[registry.JUDGE]
    )
    assert registry.tier("bleu") == registry.tier("perplexity") == registry.OFFLINE
    assert registry.tier("toxicity") == registry.ONLINE  # cheap, but opt-in


def test_registered_evaluators_choose_their_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registered", {})  # forgotten after the test
    registry.register("quick_loop", LoopingDetection, tier="online")
    registry.register("slow_loop", LoopingDetection)
    assert registry.tier("quick_loop") == "online" and registry.tier("slow_loop") == "offline"
    assert "quick_loop" in registry.by_tier()["online"]
    with pytest.raises(ValueError, match="tier must be one of online, offline, judge"):
        registry.register("odd", LoopingDetection, tier="fast")
    with pytest.raises(KeyError, match="unknown evaluator 'nope'"):
        registry.tier("nope")


def test_the_listing_groups_by_tier_in_order() -> None:
    text = format_listing()
    heads = [registry.TIERS[t] + ":" for t in registry.TIERS]
    at = [text.index(h) for h in heads]
    assert at == sorted(at)
    online, offline, judges = (text[a:b] for a, b in zip(at, [*at[1:], len(text)], strict=True))
    assert "  * faithfulness" in online and "    toxicity" in online and "bleu" not in online
    assert "    bleu" in offline and "judge_" not in offline
    assert "    judge_toxic" in judges and "    judge_sexism" in judges
    narrowed = format_listing(["judge_toxic", "nope"])
    assert heads[1] not in narrowed and heads[2] in narrowed
    assert narrowed.endswith("  ? nope: no such evaluator\n")


def test_the_docs_tier_table_matches_the_registry() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "evaluators.md").read_text("utf-8")
    rows = {
        cells[0].strip("`"): cells[2]
        for line in page.splitlines()
        if line.startswith("| `")
        and (cells := [c.strip() for c in line.strip("|").split("|")])[0].strip("`")
        in registry.TIERS
    }
    assert list(rows) == list(registry.TIERS)
    grouped = registry.by_tier()
    for tier in (registry.ONLINE, registry.OFFLINE):
        assert re.findall(r"`([a-z_0-9]+)`", rows[tier]) == grouped[tier], tier
        starred = re.findall(r"`([a-z_0-9]+)`\\\*", rows[tier])
        assert set(starred) == (set(registry.ONLINE_SUITE) if tier == "online" else set())
    assert "every `judge_*` evaluator" in rows[registry.JUDGE]
