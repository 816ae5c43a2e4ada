"""The GPTScore prompt templates of the H2O catalogue (seed 004), one set per evaluator.

Each template holds ``{target}`` exactly once: the text whose tokens are scored. Everything
before it is the prefix the model reads first. The other fields are filled from the record:
``{history}`` (the conversation's earlier turns, when the record has them, then the question
and the answer, one ``Human: ...`` / ``AI: ...`` line each), ``{source}`` (the text a summary
or rewrite starts from). ``split_prompt`` fills a template and returns ``(prefix, target)``; a
space just before ``{target}`` goes with the target, so a BPE tokenizer sees the word as it would
in running text.
``prefix + target`` is the catalogue's prompt, character for character.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

TARGET = "{target}"


@dataclass(frozen=True)
class Aspect:
    """One quality GPTScore asks about: its score name suffix and its prompt template."""

    key: str
    template: str


def _rewrite(instruction: str) -> str:
    return instruction + " {source} In other words, {target}"


def _summary(instruction: str) -> str:
    return instruction + " {source}\nTl;dr\n{target}"


def _dialogue(question: str) -> str:
    return (
        "Answer the question based on the conversation between a human and AI.\n"
        f"Question: {question} (a) Yes. (b) No.\n"
        "Conversation: {history}\n"
        "{target}"
    )


# "Question Answering (GPTScore) Evaluator": the scored text is "Answer: Yes" (the catalogue:
# "the average negative log likelihood is calculated from the tokens Answer: Yes").
QA_ASPECTS: tuple[Aspect, ...] = (
    Aspect("interest", _dialogue("Are the responses of AI interesting?")),
    Aspect("engagement", _dialogue("Are the responses of AI engaging?")),
    Aspect("understandability", _dialogue("Are the responses of AI understandable?")),
    Aspect("relevance", _dialogue("Are the responses of AI relevant to the conversation?")),
    Aspect(
        "specific", _dialogue("Are the responses of AI generic or specific to the conversation?")
    ),
    Aspect("correctness", _dialogue("Are the responses of AI correct to conversations?")),
    Aspect(
        "semantically_appropriate", _dialogue("Are the responses of AI semantically appropriate?")
    ),
    Aspect("fluency", _dialogue("Are the responses of AI fluently written?")),
)

# "Machine Translation (GPTScore) Evaluator": scored both ways (reference <-> answer).
TRANSLATION_ASPECTS: tuple[Aspect, ...] = (
    Aspect(
        "accuracy",
        _rewrite("Rewrite the following text with its core information and consistent facts:"),
    ),
    Aspect(
        "fluency",
        _rewrite("Rewrite the following text to make it more grammatical and well-written:"),
    ),
    Aspect(
        "multidimensional_quality",
        _rewrite("Rewrite the following text into high-quality text with its core information:"),
    ),
)

# "Summarization with reference (GPTScore) Evaluator": scored both ways.
SUMMARIZATION_REF_ASPECTS: tuple[Aspect, ...] = (
    Aspect("semantic_coverage", _rewrite("Rewrite the following text with the same semantics.")),
    Aspect("factuality", _rewrite("Rewrite the following text with consistent facts.")),
    Aspect("informativeness", _rewrite("Rewrite the following text with its core information.")),
    Aspect("coherence", _rewrite("Rewrite the following text into a coherent text.")),
    Aspect("relevance", _rewrite("Rewrite the following text with consistent details.")),
    Aspect("fluency", _rewrite("Rewrite the following text into a fluent and grammatical text.")),
)

# "Summarization without reference (GPTScore) Evaluator": source -> answer.
SUMMARIZATION_ASPECTS: tuple[Aspect, ...] = (
    Aspect(
        "semantic_coverage",
        _summary(
            "Generate a summary with as much semantic coverage as possible for the following text:"
        ),
    ),
    Aspect(
        "factuality", _summary("Generate a summary with consistent facts for the following text:")
    ),
    Aspect(
        "consistency", _summary("Generate a factually consistent summary for the following text:")
    ),
    Aspect(
        "informativeness",
        _summary(
            "Generate an informative summary that captures the key points of the following text:"
        ),
    ),
    Aspect("coherence", _summary("Generate a coherent summary for the following text:")),
    Aspect(
        "relevance",
        _summary("Generate a relevant summary with consistent details for the following text:"),
    ),
    Aspect(
        "fluency", _summary("Generate a fluent and grammatical summary for the following text:")
    ),
)


def split_prompt(template: str, fields: Mapping[str, str]) -> tuple[str, str]:
    """``(prefix, target)`` of ``template`` filled with ``fields`` (which include ``target``).

    Braces inside the field values are kept as they are (``str.format`` reads only the
    template).
    """
    head, marker, tail = template.partition(TARGET)
    if not marker or TARGET in tail:
        raise ValueError(f"a GPTScore template needs {TARGET} exactly once: {template!r}")
    prefix = head.format_map(fields)
    target = fields["target"] + tail.format_map(fields)
    if prefix.endswith(" "):
        prefix, target = prefix[:-1], " " + target
    return prefix, target
