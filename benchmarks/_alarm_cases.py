"""Normal and bad answers for the alarm benchmark (``alarms.py``), built from ../shared/data.

Every case is a ``RagRecord`` with the data set it came from, its part of the locked split
(``_labelled_data``: ``split`` for RAGTruth and HaluEval, its row readers for the others) and
its kind:
``normal``, or the way it was made bad. What each default score is asked about is in
``alarms.SCORES``; this module only builds the cases.

Normal cases (answers known to be fine):

- ``ragtruth/QA``, ``ragtruth/Summary``, ``ragtruth/Data2txt``: RAGTruth responses with no
  annotated hallucination, with their passages (QA: the question too);
- ``halueval``: HaluEval's correct answers with their knowledge text;
- ``ares``: ARES rows labelled relevant in every way (context, answer, faithfulness);
- ``toxicity``: the non-toxic rows of the toxicity set, each as an answer (toxicity only).

Bad cases, made the way each score names its failure (``BAD_KINDS``); each is built from a
normal case of the same data set and part, so a score's detection is measured on the same
texts as its false alarms:

- ``other_answer``: the question of one record with the answer of another (another group);
- ``other_context``: the answer of one record with the passages of another (another group);
- ``looping``: a runaway loop that fills the generation budget: the answer followed by its
  last sentence repeated until the text is four times as long and at least 400 characters (at
  least five repeats; on a line each when the sentence has no closing punctuation, as a bare
  "1967" would loop); ``short_loop``: the same with five repeats only (shown beside);
- ``pii_email`` / ``pii_phone`` / ``pii_card``: the answer with a contact line appended that
  holds an e-mail address, a phone number or a payment card number (values drawn with a fixed
  seed; card numbers pass the Luhn check, as real ones do);
- ``secret_answer`` / ``secret_context``: a credential (an API key, a token, a password line)
  appended to the answer, or to the first passage;
- ``foreign``: the question with an answer in another language (spaCy's example sentences);
- labelled bad rows: ``hallucinated`` (RAGTruth/HaluEval answers labelled hallucinated),
  ``ares_negative`` (ARES rows labelled 0 on the label the score measures), ``toxic`` (toxic
  rows as answers), ``toxic_inside`` (a toxic row put inside a clean three-sentence answer),
  ``pii_row`` (PII-set texts holding a structured identifier the default detects).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import _labelled_data as rows
from _labelled_data import GroundingExample, halueval, ragtruth, split

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators.text import split_sentences

SEED = 4747
LOOP_FACTOR = 4
LOOP_MIN_CHARS = 400
LOOP_MIN_REPEATS = 5
TUNING, LOCKED = "tuning", "locked"
NORMAL = "normal"
STRUCTURED_PII = frozenset(
    {"EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE", "IP_ADDRESS"}
)


@dataclass(frozen=True)
class Case:
    """One record to score, where it came from and whether it is normal or made bad."""

    id: str
    dataset: str
    part: str
    kind: str
    group: str
    record: RagRecord


def record(
    trace: str, query: str | None, passages: Sequence[str], response: str, task: str | None = None
) -> RagRecord:
    """A record as the evaluators read it (the task, when known, as ``ragtrace.task``)."""
    attributes = {"ragtrace.task": task} if task else {}
    return RagRecord(
        trace_id=trace,
        span_id="0",
        query=query,
        chunks=tuple(Chunk(text=p, id=str(i)) for i, p in enumerate(passages)),
        response=response,
        attributes=attributes,
    )


@dataclass(frozen=True)
class Source:
    """A labelled answer before it becomes a case: its question, passages and answer."""

    id: str
    dataset: str
    part: str
    group: str
    query: str | None
    passages: tuple[str, ...]
    response: str
    bad: bool
    task: str | None = None

    def case(self, kind: str, **changes: object) -> Case:
        fields = {"query": self.query, "passages": self.passages, "response": self.response}
        fields.update(changes)
        rec = record(
            f"{self.id}:{kind}",
            fields["query"],  # type: ignore[arg-type]
            fields["passages"],  # type: ignore[arg-type]
            fields["response"],  # type: ignore[arg-type]
            self.task,
        )
        return Case(self.id, self.dataset, self.part, kind, self.group, rec)


_TASKS = {"QA": "qa", "Summary": "summary", "Data2txt": "data2txt"}


def _grounding_sources(folder: Path) -> list[Source]:
    examples = ragtruth(folder) + halueval(folder)
    tuning, locked = split(examples)
    out = []
    for part, chosen in ((TUNING, tuning), (LOCKED, locked)):
        for e in chosen:
            out.append(_from_grounding(e, part))
    return out


def _from_grounding(e: GroundingExample, part: str) -> Source:
    dataset = f"ragtruth/{e.task}" if e.dataset == "ragtruth" else "halueval"
    return Source(
        e.id, dataset, part, e.group, e.query, e.passages, e.response, bool(e.label), _TASKS[e.task]
    )


def _ares_sources(folder: Path) -> list[Source]:
    out = []
    for part, chosen in _parts(rows.ares(folder), {TUNING, LOCKED}):
        for r in chosen:
            f = r.fields
            out.append(
                Source(
                    r.id,
                    "ares",
                    part,
                    r.group,
                    str(f["query"]),
                    (str(f["document"]),),
                    str(f.get("answer") or ""),
                    False,
                    "qa",
                )
            )
    return out


def _labelled(folder: Path) -> dict[str, dict[str, object]]:
    return {r.id: r.fields for r in rows.ares(folder)}


@dataclass
class CaseSet:
    """Every case of one run, by the evaluator they are meant for."""

    by_evaluator: dict[str, list[Case]]


def build(folder: Path, parts: Iterable[str] = (TUNING,)) -> CaseSet:
    """The cases of ``parts`` (tuning, locked or both) for every evaluator of the suite."""
    wanted = set(parts)
    rng = random.Random(SEED)
    grounding = [s for s in _grounding_sources(folder) if s.part in wanted]
    ares_all = [s for s in _ares_sources(folder) if s.part in wanted]
    ares_fields = _labelled(folder)
    normal = [s for s in grounding if not s.bad]
    hallucinated = [s for s in grounding if s.bad]
    ares_ok = [s for s in ares_all if _all_relevant(ares_fields[s.id])]
    answers = normal + ares_ok
    questions = [s for s in answers if s.query]

    by: dict[str, list[Case]] = {}
    by["looping"] = (
        _normal(answers)
        + [s.case("looping", response=loop(s.response)) for s in answers]
        + [s.case("short_loop", response=loop(s.response, runaway=False)) for s in answers]
    )
    by["sensitive_data"] = (
        _normal(answers)
        + [s.case("secret_answer", response=s.response + "\n" + secret(rng)) for s in answers]
        + [
            s.case("secret_context", passages=(s.passages[0] + "\n" + secret(rng), *s.passages[1:]))
            for s in answers
        ]
    )
    by["pii_leakage"] = (
        _normal(answers)
        + [
            s.case(kind, response=s.response + "\n" + contact(kind, rng))
            for i, s in enumerate(answers)
            for kind in (("pii_email", "pii_phone", "pii_card")[i % 3],)
        ]
        + _pii_rows(folder, wanted)
    )
    by["language_mismatch"] = _normal(questions) + _foreign(questions, wanted, rng)
    by["toxicity"] = _normal(answers) + _toxicity(folder, wanted, normal, rng)
    ares_bad_answer = [s for s in ares_all if ares_fields[s.id].get("answer_relevance") == 0]
    by["answer_relevance"] = (
        _normal(questions)
        + _swapped(questions, "other_answer", rng)
        + [s.case("ares_negative") for s in ares_bad_answer]
    )
    contexts = _one_per_context(normal, ares_all, ares_fields)
    ares_bad_context = [s for s in ares_all if ares_fields[s.id].get("context_relevance") == 0]
    by["context_relevance"] = (
        _normal(contexts)
        + _swapped(contexts, "other_context", rng)
        + [s.case("ares_negative") for s in ares_bad_context]
    )
    ares_unfaithful = [s for s in ares_all if ares_fields[s.id].get("answer_faithfulness") == 0]
    grounded_bad = (
        _swapped(answers, "other_context", rng)
        + [s.case("ares_negative") for s in ares_unfaithful]
        + [s.case("hallucinated") for s in hallucinated]
    )
    by["groundedness"] = _normal(answers) + grounded_bad
    by["faithfulness"] = _normal(answers) + grounded_bad
    return CaseSet(by)


def _normal(sources: Iterable[Source]) -> list[Case]:
    return [s.case(NORMAL) for s in sources]


def _all_relevant(fields: dict[str, object]) -> bool:
    return all(
        fields.get(k) == 1 for k in ("context_relevance", "answer_relevance", "answer_faithfulness")
    ) and bool(fields.get("answer"))


def _one_per_context(
    normal: list[Source], ares_all: list[Source], fields: dict[str, dict[str, object]]
) -> list[Source]:
    """Question and passages once each: RAGTruth QA and HaluEval per group, ARES relevant rows."""
    seen: set[tuple[str, str]] = set()
    out = []
    for s in normal:
        if not s.query:
            continue
        key = (s.group, s.query)
        if key not in seen:
            seen.add(key)
            out.append(s)
    for s in ares_all:
        f = fields[s.id]
        key = (str(f["query"]), str(f["document"]))
        if f.get("context_relevance") == 1 and key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _swapped(sources: list[Source], kind: str, rng: random.Random) -> list[Case]:
    """Each source with another's answer (``other_answer``) or passages (``other_context``),
    drawn from the same data set and part, from another group."""
    by_set: dict[tuple[str, str], list[Source]] = {}
    for s in sources:
        by_set.setdefault((s.dataset, s.part), []).append(s)
    out = []
    for members in by_set.values():
        if len(members) < 2:
            continue
        order = list(range(len(members)))
        rng.shuffle(order)
        for position, i in enumerate(order):
            s = members[i]
            for step in range(1, len(order)):
                other = members[order[(position + step) % len(order)]]
                if other.group != s.group:
                    break
            else:
                continue
            if kind == "other_answer":
                out.append(s.case(kind, response=other.response))
            else:
                out.append(s.case(kind, passages=other.passages))
    return out


def loop(answer: str, *, runaway: bool = True) -> str:
    """``answer`` running into a loop: its last sentence repeated ``LOOP_MIN_REPEATS`` times and,
    for a runaway loop, until the text is ``LOOP_FACTOR`` times as long and ``LOOP_MIN_CHARS``
    characters at least."""
    text = answer.strip()
    found = split_sentences(text)
    last = (found[-1] if found else text).strip()
    separator = " " if last[-1:] in ".!?" else "\n"
    out, repeats = text, 0
    while repeats < LOOP_MIN_REPEATS or (
        runaway and len(out) < max(LOOP_FACTOR * len(text), LOOP_MIN_CHARS)
    ):
        out += separator + last
        repeats += 1
    return out


_FIRST = ("maria", "john", "wei", "fatima", "lars", "aiko", "carlos", "priya", "tom", "olga")
_LAST = ("garcia", "smith", "chen", "khan", "berg", "tanaka", "lopez", "patel", "baker", "ivanova")
_DOMAINS = ("gmail.com", "outlook.com", "example-corp.com", "yahoo.co.uk", "proton.me")


def _luhn(digits: str) -> str:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d)
        if i % 2 == 0:
            n *= 2
            n = n - 9 if n > 9 else n
        total += n
    return digits + str((10 - total % 10) % 10)


def contact(kind: str, rng: random.Random) -> str:
    """A line holding one personal identifier of ``kind`` (``pii_email``, ``_phone``, ``_card``)."""
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    if kind == "pii_email":
        value = f"{first}.{last}{rng.randint(1, 99)}@{rng.choice(_DOMAINS)}"
        template = rng.choice(
            ("You can reach her at {}.", "Contact: {}", "Write to {} for details.")
        )
        return template.format(value)
    if kind == "pii_phone":
        a, b, c = rng.randint(201, 989), rng.randint(200, 999), rng.randint(0, 9999)
        value = rng.choice((f"({a}) {b}-{c:04d}", f"+1 {a} {b} {c:04d}", f"{a}-{b}-{c:04d}"))
        template = rng.choice(("Call him on {}.", "Phone: {}", "His mobile number is {}."))
        return template.format(value)
    prefix = rng.choice(("4", "51", "52", "37", "6011"))
    length = 15 if prefix == "37" else 16
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    number = _luhn(body)
    grouped = " ".join(number[i : i + 4] for i in range(0, len(number), 4))
    return rng.choice(("Card on file: {}.", "Paid with card {}.", "Card number {}")).format(grouped)


def secret(rng: random.Random) -> str:
    """A line holding one credential, in one of several common forms."""
    alnum = string.ascii_letters + string.digits

    def draw(n: int, alphabet: str = alnum) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    forms: list[Callable[[], str]] = [
        lambda: f"aws_access_key_id = AKIA{draw(16, string.ascii_uppercase + string.digits)}",
        lambda: f"Use the token ghp_{draw(36)} to authenticate.",
        lambda: f"export OPENAI_API_KEY=sk-proj-{draw(48)}",
        lambda: f"password: {draw(6)}{rng.randint(10, 99)}!{draw(3)}",
        lambda: f"Set api_key = {draw(32)} in the config file.",
        lambda: f"Connect with postgres://admin:{draw(10)}9@db.internal:5432/prod",
    ]
    return rng.choice(forms)()


def _parts(
    found: list[rows.LabelledRow], wanted: set[str]
) -> list[tuple[str, list[rows.LabelledRow]]]:
    """The wanted parts of ``found``'s locked split, tuning first."""
    tuning, locked = split(found)
    return [(p, chosen) for p, chosen in ((TUNING, tuning), (LOCKED, locked)) if p in wanted]


def _pii_rows(folder: Path, wanted: set[str]) -> list[Case]:
    out = []
    for part, chosen in _parts(rows.pii(folder), wanted):
        for r in chosen:
            spans = r.fields.get("spans") or []
            if any(s["entity_type"] in STRUCTURED_PII for s in spans):  # type: ignore[index,union-attr]
                src = Source(r.id, "pii", part, r.group, None, (), str(r.fields["text"]), True)
                out.append(src.case("pii_row"))
    return out


def _foreign(questions: list[Source], wanted: set[str], rng: random.Random) -> list[Case]:
    out = []
    for part, chosen in _parts(rows.foreign_sentences(), wanted):
        pool = [q for q in questions if q.part == part]
        if not pool:
            continue
        for r in chosen:
            q = rng.choice(pool)
            src = Source(r.id, "foreign", part, r.group, q.query, q.passages, "", True)
            out.append(src.case("foreign", response=str(r.fields["text"])))
    return out


def _toxicity(
    folder: Path, wanted: set[str], clean: list[Source], rng: random.Random
) -> list[Case]:
    out = []
    for part, chosen in _parts(rows.toxicity(folder), wanted):
        hosts = [
            split_sentences(s.response)[:3]
            for s in clean
            if s.part == part and len(split_sentences(s.response)) >= 3
        ]
        for r in chosen:
            text = str(r.fields["text"])
            toxic = r.fields["label"] == 1
            src = Source(r.id, "toxicity", part, r.group, None, (), text, toxic)
            out.append(src.case("toxic" if toxic else NORMAL))
            if toxic and hosts and len(text) < 300:
                host = list(rng.choice(hosts))
                host.insert(rng.randint(0, 3), text)
                out.append(src.case("toxic_inside", response=" ".join(host)))
    return out
