"""A settings file's ``{suite: online, profile: ...}`` entry: what it builds and how it fails."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ragtrace._config import SettingsError
from ragtrace._runtime.evaluation_settings import load_settings, settings_from_mapping
from ragtrace.evaluators._faithfulness import Faithfulness
from ragtrace.evaluators._registry import ONLINE_SUITE

STATIC_YAML = """\
evaluators:
  - suite: online
    profile: static
    options:
      groundedness: {threshold: 0.6}
      looping: {threshold: 0.7}
  - name: tokens_presence
    expression: '"refund"'
"""


def test_a_yaml_suite_entry_builds_the_static_profile(tmp_path: Path) -> None:
    path = tmp_path / "ragtrace.yaml"
    path.write_text(STATIC_YAML)
    settings = load_settings(path)
    by_name = {e.name: e for e in settings.evaluators}
    assert list(by_name) == [*ONLINE_SUITE, "tokens_presence"]
    assert by_name["groundedness"].model == "wordllama"  # type: ignore[attr-defined]
    assert by_name["groundedness"].threshold == 0.6
    assert by_name["looping"].threshold == 0.7
    assert by_name["context_relevance"].model == "wordllama"  # type: ignore[attr-defined]
    assert by_name["answer_relevance"].model is None  # type: ignore[attr-defined]
    # pii_leakage runs no NER by default: the profile no longer narrows it
    assert by_name["pii_leakage"].ner is False  # type: ignore[attr-defined]
    faithfulness = by_name["faithfulness"]
    assert isinstance(faithfulness, Faithfulness)
    assert faithfulness._detector.embedding_model == "wordllama"


def test_the_default_profile_is_the_suite_with_its_defaults() -> None:
    settings = settings_from_mapping({"evaluators": [{"suite": "online"}]})
    by_name = {e.name: e for e in settings.evaluators}
    assert list(by_name) == list(ONLINE_SUITE)
    assert by_name["groundedness"].model is None  # type: ignore[attr-defined]
    assert by_name["pii_leakage"].ner_candidates_only is False  # type: ignore[attr-defined]


SUITE_ERRORS: list[tuple[Any, str]] = [
    ({"suite": "onlin"}, "evaluators[0].suite: unknown suite 'onlin' (did you mean 'online'?)"),
    ({"suite": ""}, "evaluators[0].suite: expected a non-empty string"),
    (
        {"suite": "online", "profile": "statc"},
        "evaluators[0].profile: unknown profile 'statc' (did you mean 'static'?); known: "
        "default, static",
    ),
    (
        {"suite": "online", "profil": "static"},
        "evaluators[0].profil: unknown key (did you mean 'profile'?)",
    ),
    (
        {"suite": "online", "options": {"rouge": {}}},
        "evaluators[0].options.rouge: unknown key",
    ),
    (
        {"suite": "online", "options": {"groundedness": 0.6}},
        "evaluators[0].options.groundedness: expected a mapping, got",
    ),
    (
        {"suite": "online", "options": {"groundedness": {"thresold": 0.6}}},
        "evaluators[0].options.groundedness.thresold: unknown option for evaluator "
        "'groundedness' (did you mean 'threshold'?)",
    ),
    (
        {"suite": "online", "options": {"groundedness": {"max_sentences": 0}}},
        "evaluators[0].options.groundedness: evaluator 'groundedness': groundedness: "
        "max_sentences must be a positive integer",
    ),
]


@pytest.mark.parametrize(("entry", "message"), SUITE_ERRORS)
def test_a_bad_suite_entry_names_the_path(entry: Any, message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        settings_from_mapping({"evaluators": [entry]}, source="ragtrace.yaml")


def test_a_suite_member_listed_again_is_a_duplicate() -> None:
    with pytest.raises(
        SettingsError,
        match=re.escape("evaluators[1]: duplicate evaluator 'groundedness' (also evaluators[0])"),
    ):
        settings_from_mapping({"evaluators": [{"suite": "online"}, "groundedness"]})
