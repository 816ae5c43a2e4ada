"""Perturbations: deterministic by seed, small, meaning-preserving, safe on odd input."""

from __future__ import annotations

import random
import re

import pytest

from ragtrace._offline import perturb as pt
from ragtrace._offline.perturb import PERTURBATIONS, UnknownPerturbation, parse_names, perturb
from ragtrace.demo._corpus import QUESTIONS

TEXTS = [
    *QUESTIONS,
    "Show me how to buy the H5 for 7,900 EUR, please.",
    "I do not know what it is. Can't you help?",
    "café naïve résumé façade déjà",
    "Straße İstanbul ǅemal ﬁnal",
    "x",
    "   ",
]


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


@pytest.mark.parametrize("name", list(PERTURBATIONS))
def test_deterministic_by_seed_and_key(name: str) -> None:
    for text in TEXTS:
        first = perturb(name, text, seed=3, key="case-1")
        assert perturb(name, text, seed=3, key="case-1") == first
        assert PERTURBATIONS[name](text, random.Random("same")) == PERTURBATIONS[name](
            text, random.Random("same")
        )
    # Seeds and keys matter where there is a choice to make.
    variants = {perturb("typos", QUESTIONS[1], seed=s, key="k") for s in range(20)}
    assert len(variants) > 1


@pytest.mark.parametrize("name", list(PERTURBATIONS))
def test_empty_none_and_non_ascii(name: str) -> None:
    assert perturb(name, None) is None
    assert perturb(name, "") == ""
    for text in TEXTS:
        out = perturb(name, text, seed=1, key="k")
        assert isinstance(out, str)
        out.encode("utf-8")  # no lone surrogates, nothing broken
    with pytest.raises(TypeError, match=f"perturb '{name}': expected a string or None, got bytes"):
        perturb(name, b"bytes")  # type: ignore[arg-type]


def test_typos_change_few_lower_case_words_by_one_edit() -> None:
    changed_any = 0
    for i, text in enumerate(TEXTS):
        out = perturb("typos", text, seed=0, key=str(i))
        assert out is not None
        before, after = words(text), words(out)
        assert len(before) == len(after)
        diffs = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        eligible = [w for w in before if len(w) >= 4 and w.islower() and w.isalpha()]
        assert len(diffs) == (max(1, round(pt.TYPO_RATE * len(eligible))) if eligible else 0)
        for old, new in diffs:
            assert old.islower() and old.isalpha()  # names, numbers, codes untouched
            assert (old[0], old[-1]) == (new[0], new[-1])
            swapped = len(new) == len(old) and sorted(new) == sorted(old)
            dropped = len(new) == len(old) - 1 and any(
                old[:i] + old[i + 1 :] == new for i in range(len(old))
            )
            assert swapped or dropped, (old, new)
        changed_any += bool(diffs)
    assert changed_any >= len(QUESTIONS) - 2
    assert perturb("typos", "Aurora H5 7,900 EUR 13.5 kWh") == "Aurora H5 7,900 EUR 13.5 kWh"


def test_casing_only_changes_case() -> None:
    seen = set()
    for i, text in enumerate(TEXTS):
        out = perturb("casing", text, key=str(i))
        assert out is not None and len(out) == len(text)
        assert out.lower() == text.lower() or out.upper() == text.upper()
        if out != text and any(c.isalpha() for c in text):
            seen.add("lower" if out == out.lower() else "upper")
    assert seen == {"lower", "upper"}


def test_synonyms_replace_listed_words_only() -> None:
    groups = pt.synonym_groups()
    assert groups["buy"] == ("buy", "purchase") and groups["purchase"] == groups["buy"]
    assert all(len(g) >= 2 and w in g for w, g in groups.items())
    changed = 0
    for i, text in enumerate(TEXTS):
        out = perturb("synonyms", text, key=str(i))
        assert out is not None
        before, after = words(text), words(out)
        assert len(before) == len(after)
        for old, new in zip(before, after, strict=True):
            if old != new:
                assert new.lower() in groups[old.lower()] and old[0].isupper() == new[0].isupper()
        changed += out != text
    assert changed >= 8
    # A capitalised listed word inside a sentence is a name: left alone; numbers too.
    assert perturb("synonyms", "Ask Quick about 7,900 EUR") == "Ask Quick about 7,900 EUR"
    assert groups["fast"] == ("fast", "quick")  # the only other choice, kept capitalised:
    assert perturb("synonyms", "Fast delivery?", key="x") == "Quick delivery?"


def test_whitespace_and_punctuation_keep_the_words() -> None:
    for i, text in enumerate(TEXTS):
        spaced = perturb("whitespace", text, key=str(i))
        assert spaced is not None and spaced.split() == text.split()
        if text.strip():
            assert spaced != text
        marked = perturb("punctuation", text, key=str(i))
        assert marked is not None and words(marked) == words(text)
        if text.strip():
            assert marked != text
    assert perturb("punctuation", "How long is it?") == "How long is it"
    assert perturb("punctuation", "Price 7,900 EUR or 13.5 kWh") == "Price 7,900 EUR or 13.5 kWh?"


def test_contractions_both_ways() -> None:
    assert perturb("contractions", "I do not know what it is. It is fine.") == (
        "I don't know what it is. It's fine."
    )
    assert perturb("contractions", "I can't see. I\u2019m here. WON'T") == (
        "I cannot see. I am here. WILL NOT"
    )
    assert perturb("contractions", "No change here.") == "No change here."


def test_unknown_names_are_clear_errors() -> None:
    assert parse_names(["typos, casing", "synonyms"]) == ["typos", "casing", "synonyms"]
    assert parse_names(None) == []
    with pytest.raises(UnknownPerturbation, match=r"unknown perturbation 'typo' \(did you mean "):
        parse_names(["typo"])
    with pytest.raises(UnknownPerturbation, match="'casing' is given twice"):
        parse_names(["casing,casing"])
    with pytest.raises(UnknownPerturbation, match="known: typos, casing, synonyms"):
        perturb("nope", "text")
