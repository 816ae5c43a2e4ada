"""``ragtrace index`` and ``ragtrace._offline.index``: a corpus indexed ahead, then found warm.

The packaged models run for real (MiniLM, spaCy NER); stores are real SQLite files.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ragtrace._backends import _loading, passage_store
from ragtrace._backends.embeddings import get_embedder
from ragtrace._backends.passage_store import PassageStore
from ragtrace._capture.content import TextPolicy
from ragtrace._engine.call_errors import WorkerDied
from ragtrace._model import Chunk, RagRecord, Score
from ragtrace._offline import index_cli
from ragtrace._offline.index import index_passages
from ragtrace._offline.index_workers import ProcessIndexer
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._suites import online_suite
from ragtrace.evaluators._text import split_sentences

PASSAGES = (
    "Marie Curie was born in Warsaw in 1867. She won two Nobel prizes.",
    "The Eiffel Tower in Paris was finished in 1889. It is 330 metres tall.",
    "Alan Turing worked at Bletchley Park. His paper of 1936 defined computable numbers.",
)
QUESTION = "Where was Marie Curie born?"
ANSWER = "Marie Curie was born in Warsaw in 1867. She lived in Paris."


def record() -> RagRecord:
    chunks = tuple(Chunk(text=p, id=f"c{i}") for i, p in enumerate(PASSAGES))
    return RagRecord(
        trace_id="1" * 32, span_id="2" * 16, query=QUESTION, chunks=chunks, response=ANSWER
    )


def scored() -> list[tuple[str, float | None, bool | None]]:
    return [
        (s.name, s.value, s.passed)
        for e in online_suite()
        for scores in e.evaluate_batch([record()])
        for s in scores
    ]


def test_an_indexed_record_is_scored_the_same_without_computing_its_passages(
    tmp_path: Path,
) -> None:
    _loading.forget()  # fresh backends, empty caches
    plain = scored()
    embedded_plain = get_embedder().misses
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    # The question and answer are indexed too, so that a warm record computes nothing at all.
    report = index_passages([*PASSAGES, QUESTION, ANSWER], store)
    store.close()
    assert (report.passages, report.errors, report.duplicates) == (5, {}, 0)
    assert report.values > 0 and "context_relevance" in report.evaluators
    assert "looping" not in report.evaluators  # lexical evaluators compute nothing to keep
    _loading.forget()
    passage_store.install(PassageStore(store.path))
    assert scored() == plain
    assert embedded_plain > 0 and get_embedder().misses == 0
    stats = passage_store.current().stats  # type: ignore[union-attr]
    assert stats.hits > 0 and stats.misses == 0 and stats.errors == 0


def test_duplicates_empty_and_long_passages_are_counted(tmp_path: Path) -> None:
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    long = "Grace Hopper wrote the first compiler. " * 10
    report = index_passages(
        [PASSAGES[0], PASSAGES[0], "", "   ", long],
        store,
        [e for e in online_suite() if e.name == "context_relevance"],
        max_chunk_chars=100,
    )
    store.close()
    assert (report.passages, report.duplicates, report.empty, report.cut) == (2, 1, 2, 1)
    cut_text, truncated = TextPolicy(None).clean(long, 100)
    assert truncated and cut_text is not None


def test_index_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    read_only = PassageStore(tmp_path / "p.sqlite", writable=True)
    read_only.close()
    with pytest.raises(ValueError, match="writable store"):
        index_passages(PASSAGES, PassageStore(read_only.path))
    writable = PassageStore(read_only.path, writable=True)
    with pytest.raises(ValueError, match="no model-backed evaluator"):
        index_passages(PASSAGES, writable, [e for e in online_suite() if e.name == "looping"])
    for bad in ({"batch_size": 0}, {"processes": 0}, {"max_chunk_chars": 0}):
        with pytest.raises(ValueError, match="must be >= 1"):
            index_passages(PASSAGES, writable, **bad)  # type: ignore[arg-type]


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragtrace", "index", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_command_reads_json_lines_and_reports_bad_ones(tmp_path: Path) -> None:
    chunks = tmp_path / "chunks.jsonl"
    lines = [
        json.dumps({"page_content": PASSAGES[0], "metadata": {"source": "a"}}),
        json.dumps(PASSAGES[1]),
        "not json",
        json.dumps({"title": "no text here"}),
        "",
        json.dumps([1, 2]),
        json.dumps({"text": PASSAGES[2]}),
    ]
    chunks.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = tmp_path / "p.sqlite"
    done = run_cli("--store", str(store), "-e", "context_relevance", "-q", str(chunks))
    assert done.returncode == 0, done.stderr
    assert "3 chunks indexed" in done.stdout and "3 lines refused" in done.stdout
    assert f"{chunks}:3:" in done.stderr and f"{chunks}:4: no text field" in done.stderr
    assert f"{chunks}:6: expected a JSON string or object, got list" in done.stderr
    assert len(PassageStore(store)) > 0
    strict = run_cli(
        "--store", str(store), "-e", "context_relevance", "-q", "--strict", str(chunks)
    )
    assert strict.returncode == 1
    field = run_cli(
        "--store",
        str(store),
        "-e",
        "context_relevance",
        "-q",
        "--field",
        "title",
        "-",
        stdin=lines[3],
    )
    assert field.returncode == 0 and "1 chunks indexed" in field.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "static", "-e", "groundedness"], "--profile applies to the online suite"),
        (["--profile", "fancy"], "fancy"),
        (["-e", "no_such_evaluator"], "no_such_evaluator"),
        (["-e", "looping"], "no model-backed evaluator"),
        (["--batch-size", "0"], "--batch-size"),
        (["--processes", "0"], "--processes"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(json.dumps(PASSAGES[0]) + "\n", encoding="utf-8")
    done = run_cli("--store", str(tmp_path / "p.sqlite"), *args, str(chunks))
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_unreadable_inputs_and_foreign_files_exit_2(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.txt"
    foreign.write_text("my notes\n", encoding="utf-8")
    assert index_cli.main(["--store", str(foreign), str(foreign)]) == 2
    assert foreign.read_text(encoding="utf-8") == "my notes\n"  # left as it was
    assert (
        index_cli.main(["--store", str(tmp_path / "p.sqlite"), str(tmp_path / "missing.jsonl")])
        == 2
    )
    assert index_cli.main(["--store", str(tmp_path / "p.sqlite"), str(tmp_path)]) == 2


def test_framework_chunks_are_read_as_capture_reads_them() -> None:
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from ragtrace._offline.index import passage_text

    node = TextNode(text=PASSAGES[1], metadata={"file": "tower.txt"})
    assert passage_text(Document(page_content=PASSAGES[0], metadata={"a": 1})) == PASSAGES[0]
    assert passage_text(node) == PASSAGES[1]  # the content alone, as capture records it
    assert passage_text(NodeWithScore(node=node, score=0.5)) == PASSAGES[1]
    assert passage_text(PASSAGES[2]) == PASSAGES[2]
    assert passage_text(b"bytes") == b"bytes"  # cleaned like any captured value afterwards


def test_the_command_indexes_with_the_settings_file_that_names_the_store(tmp_path: Path) -> None:
    store = tmp_path / "p.sqlite"
    settings = tmp_path / "ragtrace.yaml"
    settings.write_text(
        "evaluators:\n  - {name: context_relevance}\n  - looping\n"
        f"pipeline: {{passage_store: {json.dumps(str(store))}}}\n",
        encoding="utf-8",
    )
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(json.dumps(PASSAGES[0]) + "\n", encoding="utf-8")
    done = run_cli("--store", str(store), "--config", str(settings), "-q", str(chunks))
    assert done.returncode == 0, done.stderr
    assert "evaluators: context_relevance\n" in done.stdout  # looping is lexical
    assert len(PassageStore(store)) > 0


def test_worker_processes_write_what_this_process_would(tmp_path: Path) -> None:
    suite = online_suite(options={"pii_leakage": {"ner": True}})  # NER results are indexed too
    evaluators = [e for e in suite if e.name in ("context_relevance", "pii_leakage")]
    passages = [*PASSAGES, *(f"{p} Part {i}." for i in range(5) for p in PASSAGES)]
    alone = PassageStore(tmp_path / "alone.sqlite", writable=True)
    one = index_passages(passages, alone, evaluators, batch_size=4)
    alone.close()
    shared = PassageStore(tmp_path / "shared.sqlite", writable=True)
    two = index_passages(passages, shared, evaluators, batch_size=4, processes=2)
    shared.close()
    assert (one.passages, one.errors, two.passages, two.errors) == (18, {}, 18, {})
    assert two.values == one.values == len(PassageStore(alone.path))
    with sqlite3.connect(alone.path) as a, sqlite3.connect(shared.path) as b:
        rows = [sorted(c.execute("SELECT key, value FROM entries")) for c in (a, b)]
    a.close()
    b.close()
    assert rows[0] == rows[1]  # the same keys and the same bytes
    # and the same catalogue: each process counted exactly the values it added
    counted = [PassageStore(path).namespaces() for path in (alone.path, shared.path)]
    assert counted[0] == counted[1] and sum(counted[0].values()) == one.values  # type: ignore[union-attr]
    assert {name.split(":")[0] for name in counted[0]} == {"embedding", "ner", "sentences"}  # type: ignore[union-attr]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alone.sqlite", "shared.sqlite"]


class ExitOnPassage(Evaluator):
    """A model evaluator whose process exits (code 3) on the passage "exit"."""

    name = "exit_on_passage"
    kind = "model"

    def evaluate(self, record: RagRecord) -> list[Score]:
        if record.chunks[0].text == "exit":
            os._exit(3)
        return [self.score(1.0)]


def test_a_process_that_dies_while_indexing_fails_the_run_by_its_exit_code(
    tmp_path: Path,
) -> None:
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    store.close()
    indexer = ProcessIndexer([ExitOnPassage()], str(store.path), 1)
    try:
        indexer.submit(["a passage"], 0)
        assert [r.failed for r in indexer.finished(wait=True)] == [{}]
        indexer.submit(["exit"], 1)
        with pytest.raises(WorkerDied, match=r"worker process exited \(code 3\)"):
            list(indexer.finished(wait=True))
        indexer.submit(["after"], 2)  # a fresh process took the slot
        assert [r.failed for r in indexer.finished(wait=True)] == [{}]
    finally:
        indexer.close()


def test_an_evaluator_that_cannot_travel_to_a_process_is_refused(tmp_path: Path) -> None:
    from ragtrace.evaluators import FunctionEvaluator

    local = FunctionEvaluator(lambda r: 1.0, name="local_lambda", kind="model")
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    with pytest.raises(ValueError, match="local_lambda"):
        index_passages(PASSAGES, store, [local], processes=2)
    store.close()


def test_indexing_again_computes_and_writes_only_what_is_new(tmp_path: Path) -> None:
    evaluators = [e for e in online_suite() if e.name == "context_relevance"]
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    first = index_passages(PASSAGES[:2], store, evaluators)
    store.close()
    held = len(PassageStore(store.path))
    _loading.forget()  # a new run: nothing in the embedder's cache
    again = PassageStore(store.path, writable=True)
    second = index_passages(PASSAGES, again, evaluators)  # two known passages, one new
    again.close()
    new_sentences = len(split_sentences(PASSAGES[2]))
    assert first.values == held and second.passages == 3
    assert get_embedder().misses == new_sentences  # the known ones were read, not embedded
    assert len(PassageStore(store.path)) == held + second.values > held


def test_odd_lines_are_refused_and_odd_text_is_indexed(tmp_path: Path) -> None:
    chunks = tmp_path / "odd.jsonl"
    chunks.write_bytes(
        b'{"text": "caf\xe9 is not UTF-8"}\n'  # line 1: refused
        + b"[" * 100_000  # line 2: nested too deeply, refused
        + b"\n"
        + json.dumps({"text": "A lone \ud800 surrogate. Ada Lovelace lived in London."}).encode()
        + b"\n"
        + json.dumps({"text": "word " * 400_000}).encode()  # 2 MB: cut as capture cuts it
        + b"\n"
    )
    store = tmp_path / "p.sqlite"
    done = run_cli("--store", str(store), "-e", "context_relevance", "-q", str(chunks))
    assert done.returncode == 0, done.stderr
    assert "2 chunks indexed" in done.stdout and "1 cut, 2 lines refused" in done.stdout
    assert f"{chunks}:1: 'utf-8' codec can't decode" in done.stderr
    assert f"{chunks}:2: JSON nested too deeply" in done.stderr
