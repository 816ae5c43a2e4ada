"""Language mismatch: same language, different language, too short or uncertain, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from ragtrace._model import RagRecord
from ragtrace.evaluators._language_mismatch import LanguageMismatch
from ragtrace.evaluators._registry import create

EN_Q = "How do I reset my password in the app?"
EN_A = "Open Settings, choose Security and click Reset password, then follow the link."
ES_A = "Para restablecer la contraseña, abra Configuración y elija Seguridad."
DE_Q = "Wie setze ich mein Passwort in der App zurück?"


def record(query: Any, response: Any) -> RagRecord:
    return RagRecord(trace_id="a" * 32, span_id="b" * 16, query=query, response=response)


@pytest.fixture(scope="module")
def evaluator() -> LanguageMismatch:
    return LanguageMismatch()


def test_defaults(evaluator: LanguageMismatch) -> None:
    assert (evaluator.name, evaluator.direction, evaluator.threshold) == (
        "language_mismatch",
        "higher_is_better",
        0.5,
    )
    assert evaluator.requires == frozenset({"query", "response"})
    assert isinstance(create("language_mismatch"), LanguageMismatch)


def test_same_language_passes(evaluator: LanguageMismatch) -> None:
    (score,) = evaluator.evaluate(record(EN_Q, EN_A))
    assert (score.value, score.label, score.passed) == (1.0, "pass", True)
    assert score.explanation == "same language: query en, answer en"
    assert score.details["decided"] is True and score.details["related"] is False
    assert score.details["query"]["lang"] == "en" and score.details["answer"]["lang"] == "en"
    assert score.details["backend"] == "py3langid"


@pytest.mark.parametrize(
    ("query", "answer", "q_lang", "a_lang"),
    [(EN_Q, ES_A, "en", "es"), (DE_Q, EN_A, "de", "en")],
)
def test_mismatch_fails(
    evaluator: LanguageMismatch, query: str, answer: str, q_lang: str, a_lang: str
) -> None:
    (score,) = evaluator.evaluate(record(query, answer))
    assert (score.value, score.label, score.passed) == (0.0, "fail", False)
    assert score.explanation == f"language mismatch: query {q_lang}, answer {a_lang}"


@pytest.mark.parametrize(
    ("query", "answer", "reason"),
    [
        (DE_Q, "OK", "answer too short (2 letters < 20)"),
        ("Merci!", EN_A, "query too short (5 letters < 20)"),
        (
            EN_Q,
            "```python\nprint('hello world, this is code')\n``` 42 https://x.io/a",
            "answer too short",
        ),
    ],
)
def test_short_sides_are_not_flagged(
    evaluator: LanguageMismatch, query: str, answer: str, reason: str
) -> None:
    (score,) = evaluator.evaluate(record(query, answer))
    assert (score.value, score.label, score.passed) == (1.0, "undetermined", True)
    assert score.details["decided"] is False
    assert score.details["reason"].startswith(reason)
    assert score.explanation == f"not compared: {score.details['reason']}"


def test_uncertain_side_is_not_flagged() -> None:
    strict = LanguageMismatch(min_confidence=0.99)
    (score,) = strict.evaluate(record(EN_Q, ES_A))  # the English query is ~0.94 sure
    assert (score.value, score.label) == (1.0, "undetermined")
    assert "query uncertain (en at 0.9" in score.details["reason"]


SHORT_EN_Q = "Can I get a standard pension plan in Singapore?"  # py3langid: en at 0.49
SPANISH_ANSWER = (
    "Según la política, el reembolso se procesa en un plazo de treinta días. "
    "El equipo de facturación revisa cada solicitud antes de aprobarla."
)


def test_uncertain_question_still_rules_out_a_confident_answers_language(
    evaluator: LanguageMismatch,
) -> None:
    (score,) = evaluator.evaluate(record(SHORT_EN_Q, SPANISH_ANSWER))
    assert (score.value, score.label, score.passed) == (0.0, "fail", False)
    assert score.details["decided"] is True
    assert score.details["query"]["confidence"] < 0.5 <= score.details["answer"]["confidence"]
    assert score.explanation.startswith("language mismatch: query uncertain (en at 0.4")
    assert score.explanation.endswith("gives es under 0.1; query en, answer es")
    # With an English answer the uncertain question stays undetermined, never flagged.
    (same,) = evaluator.evaluate(record(SHORT_EN_Q, EN_A))
    assert (same.value, same.label, same.passed) == (1.0, "undetermined", True)


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        # An uncertain answer is most often a bare name: never a mismatch on that evidence.
        ("What is the original name of the indoor arena in Madrid?", "Palacio de los Deportes"),
        # A flat guess for the question (top language well under half of 0.5) rules out nothing.
        ("Stardust Resort and Casino Las Vegas Nevada", SPANISH_ANSWER),
    ],
)
def test_names_and_flat_guesses_stay_undetermined(
    evaluator: LanguageMismatch, query: str, answer: str
) -> None:
    (score,) = evaluator.evaluate(record(query, answer))
    assert (score.value, score.label) == (1.0, "undetermined")


def test_related_varieties_are_not_a_mismatch(evaluator: LanguageMismatch) -> None:
    # py3langid splits English from Nigerian Pidgin: the short English question gives pcm 0.37.
    pidgin = "You go open di settings page, den you go press reset for di password wey you wan."
    (score,) = evaluator.evaluate(record("How do I reset my password?", pidgin))
    assert (score.value, score.details["related"]) == (1.0, True)
    assert score.explanation == "related languages: query en, answer pcm"
    (strict,) = LanguageMismatch(related_min=0.5).evaluate(
        record("How do I reset my password?", pidgin)
    )
    assert strict.value == 0.0


def test_code_and_urls_are_ignored(evaluator: LanguageMismatch) -> None:
    answer = ES_A + "\n```\nconfig.set('password_reset', True)  # English words in code\n```"
    (score,) = evaluator.evaluate(record(EN_Q, answer))
    assert score.details["answer"]["lang"] == "es"


def test_restricted_languages() -> None:
    restricted = LanguageMismatch(languages=["en", "de"])
    (score,) = restricted.evaluate(record(DE_Q, EN_A))
    assert (score.value, score.details["query"]["lang"]) == (0.0, "de")


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        (None, EN_A),
        (EN_Q, None),
        (b"How do I reset my password \xff", EN_A),
        (EN_Q, "ab\udcff" * 30),
    ],
)
def test_bad_input(evaluator: LanguageMismatch, query: Any, answer: Any) -> None:
    (score,) = evaluator.evaluate(record(query, answer))
    assert score.value in (0.0, 1.0)


def test_huge_input_is_capped(evaluator: LanguageMismatch) -> None:
    (score,) = evaluator.evaluate(record(EN_Q, EN_A * 100_000))
    assert score.value == 1.0 and score.details["answer"]["truncated"] is True


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="backend"):
        LanguageMismatch(backend="cld3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_confidence"):
        LanguageMismatch(min_confidence=2)
    with pytest.raises(ValueError, match="min_letters"):
        LanguageMismatch(min_letters=0)


@pytest.mark.parametrize(
    "answer",
    ["東京です。", "Да, это так.", "हाँ, यह सही है", "כן, נכון", "ኣዎ እዩ", "はい、そうです"],
)
def test_a_short_answer_in_another_script_is_a_mismatch(
    evaluator: LanguageMismatch, answer: str
) -> None:
    # Too short for the identifier, but written in another script than the English question.
    (score,) = evaluator.evaluate(record("Where is the head office of the company?", answer))
    assert (score.value, score.passed) == (0.0, False), score.explanation
    assert "written in Latin" in (score.explanation or "")


def test_a_name_in_another_script_inside_an_english_answer_is_no_mismatch(
    evaluator: LanguageMismatch,
) -> None:
    (score,) = evaluator.evaluate(record("What is the dish called?", "It is mapo tofu (麻婆豆腐)."))
    assert score.passed is True
    (short,) = evaluator.evaluate(record("Name?", "東京"))  # two letters: too few to tell
    assert short.passed is True
