"""Answers whose verdict is known by construction, for checking a detector off its training data.

The labelled sets say how a detector does on answers like theirs. They cannot say how it treats
an answer no set holds: HaluEval's answers are a few words ("Delhi"), RAGTruth's QA answers
paragraphs, and an assistant's one-sentence answer copied from its passage is neither. These
probes are built from questions and passages alone, so their labels hold without annotation:

- ``extract1`` / ``extract2``: the answer is the passage sentence (two sentences, in passage
  order) sharing most content words with the question, copied verbatim: supported (label 0);
- ``added``: ``extract1`` followed by a sentence from another document's passages: one
  unsupported sentence (label 1).

``question_probes`` builds them from labelled examples' questions and passages (each question
once); ``demo_probes`` from the demo assistant's help centre (``ragtrace.demo``), with the
demo's own invented sentences as the added ones. ``flag_rates`` gives the share flagged per
family.

``formatted`` writes probes' answers the ways assistants present them (``FORMS``: a numbered
or bulleted list, bold, citation markers, a source note, an attribution to the context, an
"Answer:" label, a greeting or closing line): the same sentences, so the same label.

``written_probes`` reads ``data/short_answer_probes.json``, written by a helper who saw neither
the detector nor its data: 45 questions with passages in 15 domains, each answered five ways in
at most 30 words (``verbatim``, ``paraphrase``, ``short``: supported; ``changed_fact``,
``added_claim``: not); or ``data/short_answer_probes_2.json`` (``WRITTEN_2``), written later by
another helper who had seen none of it: 45 questions in 15 other domains, the same five kinds
and ``yes_no`` (a faithful "Yes, ..." or "No, ..."), 270 answers; or ``_3.json`` / ``_4.json``
(``WRITTEN_3``, ``WRITTEN_4``), the same six kinds in 30 further domains, 540 answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _answer_readings import READING
from _datasets import GroundingExample
from _faith_data import Data
from train_support import RESULTS, build, response_inputs

from ragtrace.evaluators.text import content_words, split_sentences

FAMILIES = ("extract1", "extract2", "added")
WRITTEN = Path(__file__).resolve().parent / "data" / "short_answer_probes.json"
WRITTEN_2 = WRITTEN.with_name("short_answer_probes_2.json")
# Written later still (2026-11-27), by two helpers who had seen none of it: read first by
# label_calibration.py, after the shipped detector was fitted.
WRITTEN_3 = WRITTEN.with_name("short_answer_probes_3.json")
WRITTEN_4 = WRITTEN.with_name("short_answer_probes_4.json")
WRITTEN_SETS = (WRITTEN, WRITTEN_2, WRITTEN_3, WRITTEN_4)  # in the order they were written
WRITTEN_KINDS = ("verbatim", "paraphrase", "short", "yes_no", "changed_fact", "added_claim")
MIN_WORDS, MAX_WORDS = 5, 60  # a passage sentence a probe may copy


def _usable(sentence: str) -> bool:
    return MIN_WORDS <= len(sentence.split()) <= MAX_WORDS


def best_sentences(query: str, passages: Sequence[str], n: int) -> list[str]:
    """The ``n`` usable passage sentences sharing most content words with ``query`` (at least
    one), in passage order."""
    wanted = set(content_words(query))
    sentences = [s for p in passages for s in split_sentences(p) if _usable(s)]
    ranked = sorted(
        range(len(sentences)), key=lambda i: (-len(wanted & set(content_words(sentences[i]))), i)
    )
    chosen = [i for i in ranked[:n] if wanted & set(content_words(sentences[i]))]
    return [sentences[i] for i in sorted(chosen)]


def _probe(
    source: str, family: str, n: int, query: str, passages: Sequence[str], *parts: str
) -> GroundingExample:
    """A probe answer made of ``parts``; in the ``added`` family the last part is the
    unsupported one (its span labels the claim)."""
    answer = " ".join(parts)
    added = family == "added"
    span = ((len(answer) - len(parts[-1]), len(answer)),) if added else ()
    return GroundingExample(
        id=f"{source}:{family}:{n}",
        dataset=source,
        task="QA",
        group=f"{source}:{n}",
        query=query,
        passages=tuple(passages),
        response=answer,
        label=int(added),
        spans=span,
    )


def probes_for(
    source: str, questions: Sequence[tuple[str, Sequence[str]]], foreign: Sequence[str]
) -> list[GroundingExample]:
    """The three families for each (question, passages) with a usable matching sentence; the
    ``added`` one takes the next sentence of ``foreign`` in turn (sentences from elsewhere)."""
    out: list[GroundingExample] = []
    for n, (query, passages) in enumerate(questions):
        one, two = best_sentences(query, passages, 1), best_sentences(query, passages, 2)
        if not one:
            continue
        extra = foreign[n % len(foreign)]
        out.append(_probe(source, "extract1", n, query, passages, one[0]))
        if len(two) == 2:
            out.append(_probe(source, "extract2", n, query, passages, *two))
        out.append(_probe(source, "added", n, query, passages, one[0], extra))
    return out


def question_probes(examples: Sequence[GroundingExample], answers: np.ndarray) -> list[Any]:
    """Probes from the questions of the QA ``answers`` (each document once); the added sentence
    comes from the passages of the question ``len // 2`` further on (another document)."""
    seen: set[str] = set()
    questions: list[tuple[str, Sequence[str]]] = []
    for i in answers.tolist():
        example = examples[i]
        if example.task != "QA" or not example.query or example.group in seen:
            continue
        seen.add(example.group)
        questions.append((example.query, example.passages))
    shift = max(len(questions) // 2, 1)
    foreign = []
    for k in range(len(questions)):
        _, passages = questions[(k + shift) % len(questions)]
        usable = [s for p in passages for s in split_sentences(p) if _usable(s)]
        foreign.append(usable[0] if usable else "The office closes at noon on Fridays.")
    return probes_for("questions", questions, foreign)


def demo_probes() -> list[GroundingExample]:
    """Probes from the demo's questions, its retriever's chunks and its invented sentences."""
    from ragtrace.demo.app import _INDEX, CorpusRetriever
    from ragtrace.demo.corpus import QUESTIONS
    from ragtrace.demo.generator import INVENTED

    keep = CorpusRetriever.model_fields
    k, floor = int(keep["k"].default), float(keep["min_score"].default)
    questions = []
    for query in QUESTIONS:
        hits = _INDEX.search(query, k)
        passages = [a.text for rank, (a, score) in enumerate(hits) if rank == 0 or score >= floor]
        questions.append((query, passages))
    return probes_for("demo", questions, list(INVENTED))


def _attributed(sentences: list[str]) -> str:
    first = sentences[0][:1].lower() + sentences[0][1:]
    return " ".join(["According to the provided context, " + first, *sentences[1:]])


FORMS: dict[str, Callable[[list[str]], str]] = {
    "plain": " ".join,
    "numbered list": lambda s: "\n".join(f"{i + 1}. {x}" for i, x in enumerate(s)),
    "bulleted list": lambda s: "\n".join(f"- {x}" for x in s),
    "bold": lambda s: " ".join(f"**{x}**" for x in s),
    "citations [n]": lambda s: " ".join(f"{x[:-1]} [{i + 1}]{x[-1]}" for i, x in enumerate(s)),
    "source note": lambda s: " ".join(s) + " (Source: help centre)",
    "sources line": lambda s: " ".join(s) + "\nSources: [1] help centre article",
    "attribution": _attributed,
    "answer label": lambda s: "**Answer:** " + " ".join(s),
    "greeting and closing": lambda s: (
        "Great question! " + " ".join(s) + " Let me know if you have any other questions."
    ),
}


def formatted(probes: Sequence[GroundingExample]) -> list[GroundingExample]:
    """Each probe's answer in every form of ``FORMS`` (``id``: ``<source>:<family>/<form>:n``;
    an ``added`` probe's added sentence keeps its label through its span)."""
    out = []
    for probe in probes:
        source, family, n = probe.id.split(":")
        sentences = split_sentences(probe.response)
        for form, write in FORMS.items():
            answer = write(sentences)
            start = answer.rfind(sentences[-1]) if family == "added" else -1
            span = ((start, start + len(sentences[-1])),) if start >= 0 else ()
            out.append(
                GroundingExample(
                    id=f"{source}:{family}/{form}:{n}",
                    dataset=probe.dataset,
                    task=probe.task,
                    group=probe.group,
                    query=probe.query,
                    passages=probe.passages,
                    response=answer,
                    label=probe.label,
                    spans=span,
                )
            )
    return out


def written_probes(path: Path = WRITTEN) -> list[GroundingExample]:
    """A helper-written set's answers as examples (``id``: ``written:<kind>:<case id>``)."""
    cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
    return [
        GroundingExample(
            id=f"written:{answer['kind']}:{case['id']}",
            dataset="written",
            task="QA",
            group=f"written:{case['id']}",
            query=case["question"],
            passages=tuple(case["passages"]),
            response=answer["text"],
            label=int(answer["label"]),
        )
        for case in cases
        for answer in case["answers"]
    ]


def as_records(probes: Sequence[GroundingExample]) -> list[Any]:
    """The probes as the records live traffic brings: question, passages as chunks, answer."""
    from ragtrace.model import Chunk, RagRecord

    return [
        RagRecord(
            trace_id="0" * 32,
            span_id="0" * 16,
            query=p.query,
            chunks=tuple(Chunk(text=t) for t in p.passages),
            response=p.response,
        )
        for p in probes
    ]


def probe_data(probes: list[Any], embedding_model: str | None, reading: str = READING) -> Data:
    """The probes' claim features (cached by their text, the embedder and the reading) and
    response inputs."""
    digest = hashlib.sha256("\n".join(p.response for p in probes).encode()).hexdigest()[:12]
    suffix = f"_{embedding_model}" if embedding_model else ""
    suffix += "" if reading == READING else f"_{reading}"
    built = build(probes, RESULTS / f"faith_probes_{digest}{suffix}.pkl", embedding_model, reading)
    labels, groups, coverage, tasks = response_inputs(probes, reading)
    return Data(built["X"], built["y"], built["owner"], labels, groups, coverage, tasks)  # type: ignore[arg-type]


def flag_rates(
    probes: Sequence[GroundingExample], flagged: np.ndarray, offset: int
) -> dict[str, float]:
    """Share of each source's family (or written kind) flagged; ``flagged`` is indexed like
    the detector's data, whose probe rows start at ``offset``."""
    out: dict[str, float] = {}
    for source in sorted({p.dataset for p in probes}):
        for family in (*FAMILIES, *WRITTEN_KINDS):
            rows = [
                offset + k
                for k, p in enumerate(probes)
                if p.dataset == source and p.id.split(":")[1] == family
            ]
            if rows:
                out[f"{source} {family} flagged"] = float(np.mean(flagged[rows]))
    return out
