"""The demo's LangChain app as systems to evaluate offline, with two generator settings.

``ragtrace eval --system-callable`` takes any of the factories here (no server, no API key)::

    ragtrace eval --input questions.jsonl --system-callable ragtrace.demo.systems:demo_chain \\
        --perturb typos,casing -e looping,tokens_presence ... -o scores.jsonl

``demo_chain`` is the demo chain (``ragtrace.demo._app.build_chain``) with the demo's weights of
behaviours; ``careful_chain`` and ``sloppy_chain`` are the two generator settings of
``SETTINGS`` that ``examples/compare_generators.py`` compares. In all of them the model draws
its behaviour from the *question* (its content words, as the retriever reads them) instead of
a running schedule, so an answer does not depend on what was asked before: the same question
gets the same answer in any order, and so does one that differs only in case, spacing or
punctuation, while a typo or a synonym that changes a content word may draw another behaviour.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING

from pydantic import PrivateAttr

from ragtrace.demo._app import DemoChatModel, build_chain
from ragtrace.demo._corpus import QUESTIONS
from ragtrace.demo._generator import (
    CAREFUL_WEIGHTS,
    SLOPPY_WEIGHTS,
    WEIGHTS,
    Behaviour,
    Schedule,
)
from ragtrace.demo._retrieval import words

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable

__all__ = ["QUESTIONS", "SETTINGS", "careful_chain", "chain_for", "demo_chain", "sloppy_chain"]

SETTINGS: dict[str, dict[Behaviour, float]] = {
    "aurora-careful": CAREFUL_WEIGHTS,
    "aurora-sloppy": SLOPPY_WEIGHTS,
}
"""Generator settings: how often the model answers each way (see ``ragtrace.demo._generator``)."""


class QuestionSeededChatModel(DemoChatModel):
    """``DemoChatModel`` whose behaviour is drawn from the question's content words."""

    _draw_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _answer(self, messages: list[BaseMessage]) -> tuple[str, Behaviour, int]:
        question = str(messages[-1].content) if messages else ""
        key = " ".join(sorted(set(words(question))))
        digest = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        weights = self.weights or WEIGHTS
        with self._draw_lock:  # the parent draws from self._schedule: one question at a time
            self._schedule = Schedule(int.from_bytes(digest[:8], "big"), weights)
            return super()._answer(messages)


def chain_for(setting: str | None = None, seed: int = 0, k: int = 4) -> Runnable[str, str]:
    """The demo chain with a question-seeded model using ``SETTINGS[setting]`` (None: default).

    Raises:
        ValueError: An unknown setting.
    """
    if setting is not None and setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; known: {', '.join(SETTINGS)}")
    weights = None if setting is None else dict(SETTINGS[setting])
    return build_chain(seed, k, model=QuestionSeededChatModel(seed=seed, weights=weights))


def demo_chain() -> Runnable[str, str]:
    """The demo chain with the demo's own weights of behaviours."""
    return chain_for(None)


def careful_chain() -> Runnable[str, str]:
    """The demo chain with the ``aurora-careful`` setting."""
    return chain_for("aurora-careful")


def sloppy_chain() -> Runnable[str, str]:
    """The demo chain with the ``aurora-sloppy`` setting."""
    return chain_for("aurora-sloppy")
