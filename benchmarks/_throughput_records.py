"""Synthetic RAG records for ``throughput.py``: seeded, varied English prose, as JSON lines.

Each record has a question, four chunks of about 500 characters (whole sentences, 470-570
characters, 505 on average) and a three-sentence answer built the way a RAG model answers: two
sentences taken (and lightly reworded) from the chunks, one of its own. A few answers carry
what the online suite looks for, at rates a watched production assistant might see: contact
details or a card number (4 %), an insult (2 %), another language (2 %), a loop (2 %).

Three workloads:

- ``cold``: every chunk is new text (no cache can help);
- ``corpus``: chunks are drawn from a fixed corpus of ``CORPUS_SIZE`` passages, four of one
  topic per record, as a retriever over a knowledge base returns them; caches fill as the run
  goes (the first records mostly bring passages never seen);
- ``warm``: the same records as ``corpus``, scored after ``corpus_pass()`` (one record per four
  passages, every passage once) has gone through the evaluators: the steady state of a service
  that has been watching the assistant for a while, where the knowledge base's passages have
  been seen and each request brings only its question and answer as new text.

The corpus is the same whatever the seed (``CORPUS_SEED``), so a pass over it warms the caches
for every seed's records. ``records(workload, n, seed)`` is deterministic: the same arguments
give the same lines.
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any

WORKLOADS = ("cold", "corpus", "warm", "indexed")
CORPUS_SEED = 20_240_917
_AN = re.compile(r"\b([Aa]) (?=[aeiouAEIOU])")
CORPUS_SIZE = 300
CHUNKS = 4
CHUNK_MIN, CHUNK_MAX = 470, 570

TOPICS: dict[str, dict[str, list[str]]] = {
    "billing": {
        "noun": ["invoice", "refund", "subscription", "billing period", "payment method",
                 "credit note", "late fee", "annual plan", "tax receipt", "chargeback"],
        "actor": ["the billing team", "your account owner", "the finance department"],
        "verb": ["issues", "reviews", "cancels", "adjusts", "approves", "records"],
    },
    "shipping": {
        "noun": ["parcel", "tracking number", "delivery window", "customs form", "return label",
                 "courier", "warehouse", "express option", "pickup point", "package weight"],
        "actor": ["the logistics partner", "our warehouse staff", "the courier"],
        "verb": ["dispatches", "scans", "holds", "reroutes", "confirms", "delivers"],
    },
    "security": {
        "noun": ["password", "two-factor code", "access token", "audit log", "session",
                 "encryption key", "login attempt", "recovery email", "firewall rule", "role"],
        "actor": ["the security team", "an administrator", "the identity service"],
        "verb": ["rotates", "revokes", "blocks", "logs", "verifies", "expires"],
    },
    "hr": {
        "noun": ["leave request", "payslip", "probation period", "pension plan", "expense claim",
                 "performance review", "notice period", "training budget", "overtime", "badge"],
        "actor": ["your line manager", "the people team", "the payroll office"],
        "verb": ["approves", "schedules", "reimburses", "records", "reviews", "signs"],
    },
    "cloud": {
        "noun": ["virtual machine", "storage bucket", "snapshot", "load balancer", "quota",
                 "availability zone", "backup", "API key", "autoscaling group", "database replica"],
        "actor": ["the platform", "the on-call engineer", "the scheduler"],
        "verb": ["provisions", "replicates", "throttles", "restores", "migrates", "monitors"],
    },
    "travel": {
        "noun": ["booking", "boarding pass", "baggage allowance", "seat upgrade", "itinerary",
                 "travel insurance", "hotel voucher", "layover", "visa letter", "fare class"],
        "actor": ["the travel desk", "the airline", "your travel agent"],
        "verb": ["confirms", "rebooks", "refunds", "issues", "changes", "validates"],
    },
}  # fmt: skip
ADJ = ["standard", "premium", "temporary", "regional", "default", "shared", "new", "expired",
       "pending", "primary", "secondary", "monthly", "verified", "archived"]  # fmt: skip
PERIOD = ["within 24 hours", "after 30 days", "every quarter", "before the end of the month",
          "within five business days", "once a year", "during the first week",
          "no later than 48 hours", "at midnight UTC", "within two weeks"]  # fmt: skip
CONDITION = ["if the request is complete", "unless the account is suspended",
             "when the customer asks for it", "as long as the plan is active",
             "only after manual review", "provided the form is signed",
             "if no dispute is open", "once the payment has cleared"]  # fmt: skip
PEOPLE = ["Maria Lopez", "James Chen", "Aisha Patel", "Tom Becker", "Elena Rossi", "Kenji Sato"]
PLACES = ["Berlin", "Toronto", "Singapore", "Madrid", "Chicago", "Dublin", "Sydney", "Lyon"]

SENTENCES = [
    "{Actor} {verb} the {adj} {noun} {period}.",
    "A {noun} is only valid {condition}.",
    "Customers in {place} can request a {adj} {noun} {period}.",
    "The {noun} limit is {num} per account, {condition}.",
    "{Actor} {verb} every {noun} {condition}.",
    "If the {noun} is {adj}, {actor} {verb} it {period}.",
    "Each {noun} has a reference number that starts with {code}.",
    "You will receive an email about the {noun} {period}.",
    "Fees for a {adj} {noun} are {num} euros, {condition}.",
    "The {noun2} depends on the {noun}, so check both {period}.",
    "Since {year}, {actor} {verb} the {noun} automatically.",
    "Contact support if the {noun} does not arrive {period}.",
    "A {adj} {noun} cannot be combined with a {noun2}.",
    "In most cases the {noun} is processed {period}, {condition}.",
    "Our policy treats the {noun} and the {noun2} as separate items.",
    "For accounts opened in {place}, the {noun} follows local rules.",
    "The dashboard shows the status of each {noun} and its {noun2}.",
    "Up to {num} people can share one {adj} {noun}.",
]
QUESTIONS = [
    "How long does it take before {actor} {verb} my {noun}?",
    "What happens to the {noun} {condition}?",
    "Can I get a {adj} {noun} in {place}?",
    "Who {verb} the {noun} and when?",
    "Is there a fee for the {noun}?",
    "How many {noun}s can one account have?",
    "Why was my {noun} not processed yet?",
    "What is the difference between a {noun} and a {noun2}?",
]
OWN_SENTENCES = [
    "Let me know if you need anything else about your {noun}.",
    "I hope this helps you sort out the {noun}.",
    "Please note that {actor} may update this policy at any time.",
    "You can also find this in the help centre under {noun}s.",
    "In short, it depends on your {noun2}.",
]
LEAKS = [
    "You can reach {person} directly at {email} or on {phone}.",
    "The card on file is {card}, registered to {person}.",
    "{person} lives at {street} in {place} if you want to send it by post.",
]
RUDE = [
    "Honestly, only an idiot would ask this question twice.",
    "Stop wasting my time with such stupid questions.",
]
SPANISH = (
    "Según la política, el reembolso se procesa en un plazo de treinta días. "
    "El equipo de facturación revisa cada solicitud antes de aprobarla. "
    "Si tiene más preguntas, póngase en contacto con el servicio de atención al cliente."
)


class Generator:
    """Builds sentences, chunks, questions and answers from one seeded random source."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def fill(self, template: str, topic: str) -> str:
        t, r = TOPICS[topic], self.rng
        noun, noun2 = r.sample(t["noun"], 2)
        actor = r.choice(t["actor"])
        values = {
            "noun": noun, "noun2": noun2, "actor": actor, "Actor": actor[0].upper() + actor[1:],
            "verb": r.choice(t["verb"]), "adj": r.choice(ADJ), "period": r.choice(PERIOD),
            "condition": r.choice(CONDITION), "place": r.choice(PLACES),
            "num": str(r.randint(2, 500)), "year": str(r.randint(2015, 2024)),
            "code": f"{r.choice('ABCDEFGHKMPRT')}{r.choice('ABCDEFGHKMPRT')}-{r.randint(100, 999)}",
            "person": r.choice(PEOPLE), "street": f"{r.randint(1, 200)} Harbour Street",
            "email": f"{r.choice(PEOPLE).split()[0].lower()}.{r.randint(1, 99)}@example.com",
            "phone": f"+1 415 555 {r.randint(1000, 9999)}",
            "card": f"4111 1111 1111 {r.randint(1000, 9999)}",
        }  # fmt: skip
        return _AN.sub(r"\1n ", template.format(**values))

    def chunk(self, topic: str) -> str:
        while True:
            text = ""
            while len(text) < CHUNK_MIN:
                text = f"{text} {self.fill(self.rng.choice(SENTENCES), topic)}".strip()
            if len(text) <= CHUNK_MAX:
                return text

    def answer(self, chunks: list[str], topic: str) -> str:
        r = self.rng
        facts = [s.strip() + "." for c in chunks[:2] for s in c.split(". ") if s.strip()]
        first, second = (f.rstrip(".") + "." for f in r.sample(facts, 2))
        if r.random() < 0.5:
            first = "According to the documentation, " + first[0].lower() + first[1:]
        roll = r.random()
        if roll < 0.02:
            return SPANISH
        if roll < 0.04:
            return f"{first} {first} {first}"
        if roll < 0.06:
            return f"{first} {second} {r.choice(RUDE)}"
        own = self.fill(r.choice(LEAKS if roll < 0.10 else OWN_SENTENCES), topic)
        return f"{first} {second} {own}"


def records(workload: str, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` records of ``workload`` as JSON-ready mappings (``indexed`` records are the
    ``cold`` ones: what differs is that their passages were indexed beforehand)."""
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    from_corpus = workload in ("corpus", "warm")
    gen = Generator(seed * 1_000_003 + (1 if from_corpus else 0))
    topics = list(TOPICS)
    corpus = _corpus() if from_corpus else {}
    rows = []
    for i in range(n):
        topic = gen.rng.choice(topics)
        if from_corpus:
            chunks = gen.rng.sample(corpus[topic], CHUNKS)
        else:
            chunks = [gen.chunk(topic) for _ in range(CHUNKS)]
        rows.append(_record(f"{workload}-{seed}-{i}", gen, topic, chunks))
    return rows


def corpus_pass() -> list[dict[str, Any]]:
    """Records that bring every corpus passage once (four of one topic each), to warm caches."""
    gen = Generator(CORPUS_SEED + 1)
    return [
        _record(f"corpus-pass-{topic}-{k}", gen, topic, passages[k : k + CHUNKS])
        for topic, passages in _corpus().items()
        for k in range(0, len(passages) - CHUNKS + 1, CHUNKS)
    ]


@functools.cache
def _corpus() -> dict[str, list[str]]:
    gen = Generator(CORPUS_SEED)
    topics = list(TOPICS)
    corpus: dict[str, list[str]] = {t: [] for t in topics}
    for k in range(CORPUS_SIZE):
        topic = topics[k % len(topics)]
        corpus[topic].append(gen.chunk(topic))
    return corpus


def _record(record_id: str, gen: Generator, topic: str, chunks: list[str]) -> dict[str, Any]:
    return {
        "id": record_id,
        "query": gen.fill(gen.rng.choice(QUESTIONS), topic),
        "contexts": [
            {"text": c, "id": f"{topic}-{hash_id(c)}", "score": round(0.9 - 0.05 * k, 2)}
            for k, c in enumerate(chunks)
        ],
        "response": gen.answer(chunks, topic),
        "app": "bench",
    }


def hash_id(text: str) -> str:
    """A short stable id for a passage (not Python's salted ``hash``)."""
    value = 0
    for ch in text:
        value = (value * 131 + ord(ch)) % 1_000_000_007
    return f"{value:09d}"
