"""The demo's answer logic: a seeded schedule of behaviours and the answers they produce.

Pure Python; ``ragtrace.demo._app.DemoChatModel`` wraps it as a LangChain chat model. Most
answers are extractive (the context sentences closest to the question); by a seeded schedule
some misbehave the way real assistants do, so evaluator scores vary::

    schedule = Schedule(seed=7)
    behaviour, rng = schedule.draw()            # "grounded", "looping", ...
    text = compose_answer(question, context, behaviour, rng)
"""

from __future__ import annotations

import random
import re
import threading
from typing import Literal

from ragtrace.demo._retrieval import words

Behaviour = Literal["grounded", "off_context", "invented", "pii", "rude", "looping", "error"]

# How often each behaviour happens; the rest of the time the answer is grounded.
WEIGHTS: dict[Behaviour, float] = {
    "grounded": 0.70,
    "off_context": 0.06,
    "invented": 0.07,
    "pii": 0.06,
    "rude": 0.04,
    "looping": 0.06,
    "error": 0.01,
}
# A careful generator: 92% grounded answers, a few bad ones of each kind.
CAREFUL_WEIGHTS: dict[Behaviour, float] = {
    "grounded": 0.92, "off_context": 0.02, "invented": 0.02, "pii": 0.01, "rude": 0.01,
    "looping": 0.02, "error": 0.0,
}  # fmt: skip
# A sloppy generator: under half of the answers grounded.
SLOPPY_WEIGHTS: dict[Behaviour, float] = {
    "grounded": 0.45, "off_context": 0.10, "invented": 0.15, "pii": 0.08, "rude": 0.05,
    "looping": 0.15, "error": 0.02,
}  # fmt: skip

OFF_CONTEXT = (
    "Most home batteries last about fifteen years and can be recycled at any supermarket.",
    "You should ask your neighbour, they usually know these things.",
    "Electricity prices tend to be lowest on Sunday afternoons in spring.",
    "The best time to buy solar panels is right before winter.",
    "Our company was founded to make the world a greener place for everyone.",
)
INVENTED = (
    "The H5 also works as a Wi-Fi repeater with a range of 200 metres.",
    "It was designed in Reykjavik in 1998 by a team of volcanologists.",
    "Every unit comes with a free lifetime subscription to Aurora Premium.",
    "In Sport mode the H5 doubles its output to 10 kW for an hour.",
    "The battery is waterproof to a depth of three metres.",
)
CONTACTS = (
    "For more, write to our engineer Maria Keller at maria.keller@example.com.",
    "Call Tom Berger directly on +49 30 5550 1234, he handles these cases.",
    "My colleague can help: jana.novak@example.org, phone +33 1 5550 0199.",
)
RUDE = (  # insults, as a toxic assistant writes them; the last is only rude
    "That is a stupid question, you idiot. Read the manual.",
    "Are you really this dumb? Any moron could figure this out.",
    "Stop wasting my time with your idiotic questions, loser.",
    "What a pathetic question. Figure it out yourself, idiot.",
    "Shut up and read the damn manual.",
)
DONT_KNOW = "I don't know; the help centre does not cover that."
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Schedule:
    """Draws one behaviour per answer from ``WEIGHTS`` with a seeded generator (thread-safe).

    Args:
        seed: Same seed, same sequence of behaviours (and of the random choices in answers).
        weights: Override ``WEIGHTS``.
    """

    def __init__(self, seed: int = 0, weights: dict[Behaviour, float] | None = None) -> None:
        self.weights = dict(weights or WEIGHTS)
        if not self.weights or any(w < 0 for w in self.weights.values()):
            raise ValueError("schedule weights must be non-negative and not all empty")
        self.rng = random.Random(f"ragtrace-demo-model:{seed}")
        self._lock = threading.Lock()

    def draw(self) -> tuple[Behaviour, random.Random]:
        """The next behaviour and a generator seeded for its answer (so threads do not mix)."""
        with self._lock:
            choices = list(self.weights)
            behaviour = self.rng.choices(choices, weights=[self.weights[c] for c in choices])[0]
            return behaviour, random.Random(self.rng.getrandbits(64))

    def set_weights(self, weights: dict[Behaviour, float]) -> None:
        """Draw with ``weights`` from now on; the seeded sequence goes on where it was."""
        chosen = dict(weights)
        if not chosen or any(w < 0 for w in chosen.values()):
            raise ValueError("schedule weights must be non-negative and not all empty")
        with self._lock:
            self.weights = chosen


def best_sentences(question: str, context: str, n: int = 2) -> list[str]:
    """The ``n`` context sentences sharing most words with the question (in context order)."""
    sentences = [s.strip() for s in _SENTENCE.split(context) if s.strip()]
    wanted = set(words(question))
    ranked = sorted(
        range(len(sentences)), key=lambda i: (-len(wanted & set(words(sentences[i]))), i)
    )
    chosen = [i for i in ranked[:n] if wanted & set(words(sentences[i]))]
    return [sentences[i] for i in sorted(chosen)]


def compose_answer(question: str, context: str, behaviour: Behaviour, rng: random.Random) -> str:
    """The answer to ``question`` given the retrieved ``context``, behaving as told.

    Raises:
        RuntimeError: For the ``error`` behaviour (an upstream failure, as real models have).
    """
    if behaviour == "error":
        raise RuntimeError("demo model: upstream inference server timed out")
    found = best_sentences(question, context, n=rng.choice((1, 1, 2)))
    grounded = " ".join(found) or DONT_KNOW
    if behaviour == "off_context":
        return rng.choice(OFF_CONTEXT)
    if behaviour == "invented":
        return f"{grounded} {rng.choice(INVENTED)}"
    if behaviour == "pii":
        return f"{grounded} {rng.choice(CONTACTS)}"
    if behaviour == "rude":
        return f"{rng.choice(RUDE)} {grounded}"
    if behaviour == "looping":
        sentence = found[0] if found else DONT_KNOW
        return " ".join([sentence] * rng.randint(3, 6))
    return grounded
