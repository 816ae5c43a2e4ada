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

Agent turns (``agent_cases``, for ``alarms.py --agents``): scripted LangChain ``create_agent``
turns over the demo's help centre (``AgentTurns``: LangChain's fake chat model, real tools,
ragtrace's LangChain capture), healthy (``normal``) or failing in one of ``AGENT_KINDS``: a tool
outage, a call repeated unchanged, a runaway loop, a wrong tool. The questions (``agent_scenarios``)
are split into the two parts by ``agent_parts``, with a fixed seed, before any turn is scored.
"""

from __future__ import annotations

import functools
import random
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _labelled_data as rows
from _labelled_data import GroundingExample, halueval, ragtruth, split

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._text import split_sentences

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


# -- agent turns: scripted LangChain agents over the demo corpus ---------------------------------

AGENT_SEED = 5151
AGENT_DATASET = "demo-agents"
AGENT_KINDS = ("tool_outage", "repeated_calls", "runaway_loop", "wrong_tool")
ACCOUNTS = tuple(f"AUR-{n}" for n in range(1001, 1061))
LOOP_ROUNDS = (6, 40)  # rounds of tool use of a runaway loop, uniform, both ends included
TOOL_NAMES = {
    "search": "search_help_centre",
    "account": "lookup_account",
    "calculator": "calculator",
}


@dataclass(frozen=True)
class AgentScenario:
    """A user question and the tools a healthy agent answers it with (``search``: the help
    centre; ``account``: the search and an account lookup; ``sum``: the search and the
    calculator)."""

    question: str
    shape: str
    account: str = ""
    expression: str = ""


def agent_scenarios() -> list[AgentScenario]:
    """The demo's questions and questions about accounts and sums, in a fixed order."""
    from ragtrace.demo._corpus import QUESTIONS

    rng = random.Random(AGENT_SEED)
    found = [AgentScenario(q, "search") for q in dict.fromkeys(QUESTIONS)]
    for account in rng.sample(ACCOUNTS, 16):
        found.append(AgentScenario(f"Which plan is account {account} on?", "account", account))
    for units in range(2, 10):
        for what, per in (("energy", "13.5"), ("power", "5")):
            found.append(
                AgentScenario(
                    f"How much {what} do {units} stacked Aurora H5 units give?",
                    "sum",
                    expression=f"{units} * {per}",
                )
            )
    return found


def agent_parts(scenarios: Sequence[AgentScenario]) -> dict[str, str]:
    """Question -> part: half the questions of each shape tuning, half locked, drawn with a
    fixed seed before any turn is scored."""
    rng = random.Random(AGENT_SEED + 1)
    out: dict[str, str] = {}
    for shape in sorted({s.shape for s in scenarios}):
        questions = sorted({s.question for s in scenarios if s.shape == shape})
        rng.shuffle(questions)
        for i, question in enumerate(questions):
            out[question] = TUNING if i % 2 == 0 else LOCKED
    return out


Step = tuple[str, dict[str, str]]  # (tool, arguments); ("", {"text": ...}) is the answer


def _queries(question: str, rng: random.Random, n: int) -> list[str]:
    """``n`` different search queries for ``question``: its content words, shuffled and cut."""
    from ragtrace.demo._retrieval import STOP_WORDS

    terms = [w.strip("?.,") for w in question.split() if w.lower().strip("?.,") not in STOP_WORDS]
    terms = terms or question.split()
    found: list[str] = []
    for _ in range(50 * n):
        picked = rng.sample(terms, rng.randint(1, len(terms)))
        extra = [w for w in ("aurora", "h5", "battery") if w not in " ".join(picked).lower()]
        query = " ".join(picked + rng.sample(extra, rng.randint(0, min(2, len(extra)))))
        if query not in found:
            found.append(query)
        if len(found) == n:
            break
    return found + [f"{found[-1]} {i}" for i in range(n - len(found))]


def _healthy(s: AgentScenario, rng: random.Random) -> tuple[list[Step], dict[str, set[int]]]:
    """A healthy turn: 0-3 tool calls; now and then a call the tool refuses (an account id
    without its prefix) made good, a search that timed out retried unchanged, or an account id
    the user mistyped, which the lookup rightly refuses and the agent asks about."""
    flaky: dict[str, set[int]] = {}
    roll = rng.random()
    steps: list[Step] = []
    if s.shape == "search":
        if roll < 0.10:
            return [], flaky  # answered from the conversation, no tool
        steps = [("search", {"query": q}) for q in _queries(s.question, rng, 1 + (roll > 0.75))]
    elif s.shape == "account":
        if rng.random() < 0.06:
            steps.append(("account", {"account_id": s.account.removeprefix("AUR-")}))
        typo = rng.random() < 0.08  # the user's id does not exist: the turn ends on the refusal
        steps.append(("account", {"account_id": s.account[:-1] + "X" if typo else s.account}))
        if roll < 0.4:
            steps.insert(0, ("search", {"query": "plans " + rng.choice(["annual", "monthly"])}))
    else:
        steps = [("search", {"query": q}) for q in _queries(s.question, rng, 1)]
        steps.append(("calculator", {"expression": s.expression}))
    searches = [i for i, (tool, _) in enumerate(steps) if tool == "search"]
    if searches and rng.random() < 0.03:  # a search timed out and is retried as it was
        at = rng.choice(searches)
        steps.insert(at + 1, steps[at])
        flaky["search"] = {sum(t == "search" for t, _ in steps[:at])}
    return steps, flaky


def _bad(
    kind: str, s: AgentScenario, rng: random.Random
) -> tuple[list[Step], dict[str, set[int]], frozenset[str]]:
    """A turn gone wrong in the way ``kind`` names (see ``AGENT_KINDS``)."""
    steps, flaky = _healthy(s, rng)
    if not steps:
        steps = [("search", {"query": q}) for q in _queries(s.question, rng, 1)]
    if kind == "tool_outage":  # the tool the turn needs is down; the agent tries 1-3 times
        needed = "account" if s.shape == "account" else "search"
        tries = [st for st in steps if st[0] == needed][:1] * rng.randint(1, 3)
        if needed == "search" and rng.random() < 0.5:
            tries = [("search", {"query": q}) for q in _queries(s.question, rng, len(tries))]
        return tries + [st for st in steps if st[0] != needed], {}, frozenset({needed})
    if kind == "repeated_calls":  # one call made again, unchanged but for case and spacing
        at = rng.randrange(len(steps))
        tool, args = steps[at]
        again = [(tool, {k: rng.choice([v, v.upper(), f" {v} "]) for k, v in args.items()})]
        return steps[: at + 1] + again * rng.randint(1, 3) + steps[at + 1 :], flaky, frozenset()
    if kind == "runaway_loop":  # the agent keeps searching, rephrasing, and never settles
        rounds = rng.randint(*LOOP_ROUNDS)
        pool = _queries(s.question, rng, max(3, rounds // rng.randint(1, 3)))
        return [("search", {"query": rng.choice(pool)}) for _ in range(rounds)], {}, frozenset()
    if kind == "wrong_tool":  # a tool that cannot answer the question, instead of the search
        wrong: Step = rng.choice(
            [
                ("calculator", {"expression": s.question}),  # refused: not a sum
                ("calculator", {"expression": f"{rng.randint(2, 9)} * 13.5"}),
                ("account", {"account_id": rng.choice(ACCOUNTS)}),
            ]
        )
        return [wrong], {}, frozenset()
    raise ValueError(f"unknown agent kind {kind!r}")


def agent_cases(runs_per_kind: int, parts: Iterable[str] = (TUNING,)) -> list[Case]:
    """``runs_per_kind`` turns of each kind (normal and ``AGENT_KINDS``) over the scenarios of
    ``parts``, each run by a LangChain ``create_agent`` on LangChain's fake chat model with real
    tools and captured by ragtrace's LangChain handler: the records production would produce."""
    scenarios = agent_scenarios()
    part_of = agent_parts(scenarios)
    wanted = set(parts)
    chosen = [s for s in scenarios if part_of[s.question] in wanted]
    rng = random.Random(AGENT_SEED + 2)
    out: list[Case] = []
    with AgentTurns() as turns:
        for kind in (NORMAL, *AGENT_KINDS):
            for n in range(runs_per_kind):
                s = chosen[n % len(chosen)]
                if kind == NORMAL:
                    steps, flaky = _healthy(s, rng)
                    down: frozenset[str] = frozenset()
                else:
                    steps, flaky, down = _bad(kind, s, rng)
                rec = turns.run(s.question, steps, flaky=flaky, down=down)
                case_id = f"{kind}-{n}"
                out.append(Case(case_id, AGENT_DATASET, part_of[s.question], kind, s.question, rec))
    return out


class AgentTurns:
    """Runs scripted turns through LangChain's ``create_agent`` and returns the record ragtrace's
    LangChain capture made of each. The chat model is LangChain's ``FakeMessagesListChatModel``
    replying with the script's tool calls, then an answer; the tools are real: a BM25 search of
    the demo's help centre (the demo's retriever), an account lookup that refuses unknown ids, a
    calculator that refuses what is not a sum. ``down`` names tools whose backend is out for the
    whole turn; ``flaky`` the calls (by their index among the tool's calls) that time out."""

    def __enter__(self) -> AgentTurns:
        from opentelemetry.sdk.trace import TracerProvider
        from prometheus_client import CollectorRegistry

        import ragtrace
        from ragtrace.demo._app import CorpusRetriever
        from ragtrace.demo._corpus import ARTICLES
        from ragtrace.demo._retrieval import Bm25Index
        from ragtrace.integrations.langchain import RagtraceCallbackHandler

        self.records: list[RagRecord] = []
        self.instance = ragtrace.init(
            app="alarm-agents",
            tracer_provider=TracerProvider(),
            registry=CollectorRegistry(),
            evaluators=(),
        )
        self.instance.add_record_sink(self.records.append)
        self.handler = RagtraceCallbackHandler(self.instance)
        self.retriever = CorpusRetriever()
        self.index = Bm25Index(ARTICLES)
        return self

    def __exit__(self, *exc: object) -> None:
        self.instance.shutdown()

    def run(
        self,
        question: str,
        steps: Sequence[Step],
        *,
        flaky: dict[str, set[int]] | None = None,
        down: frozenset[str] = frozenset(),
    ) -> RagRecord:
        """The record of one turn: ``steps`` called one per model reply, then the answer."""
        from langchain.agents import create_agent
        from langchain_core.messages import AIMessage, BaseMessage

        replies: list[BaseMessage] = [
            AIMessage(
                content="",
                tool_calls=[{"name": TOOL_NAMES[tool], "args": args, "id": f"call-{i}"}],
            )
            for i, (tool, args) in enumerate(steps)
        ]
        replies.append(AIMessage(content=self.answer(question, down)))
        tools = self.tools(flaky or {}, down)
        agent = create_agent(_scripted_model_class()(responses=replies), tools=tools)
        agent.invoke({"messages": [("user", question)]}, {"callbacks": [self.handler]})
        if len(self.records) != 1:
            raise RuntimeError(f"one turn made {len(self.records)} records")
        return self.records.pop()

    def answer(self, question: str, down: frozenset[str]) -> str:
        if down:
            return "I could not reach the help centre's services just now; please try again."
        best = self.index.search(question, 1)
        return best[0][0].text.split(". ")[0] + "." if best else "I do not know."

    def tools(self, flaky: dict[str, set[int]], down: frozenset[str]) -> list[Any]:
        """The three tools of one turn, with the turn's outages and time-outs."""
        from langchain_core.tools import ToolException, tool

        made: dict[str, int] = {}
        retriever = self.retriever

        def backend(name: str) -> None:
            n = made[name] = made.get(name, -1) + 1
            if name in down:
                raise ToolException(f"{TOOL_NAMES[name]}: service unavailable")
            if n in flaky.get(name, ()):
                raise ToolException(f"{TOOL_NAMES[name]}: timed out after 10 s")

        @tool
        def search_help_centre(query: str) -> str:
            """Search the Aurora H5 help centre."""
            backend("search")
            return "\n\n".join(d.page_content for d in retriever.invoke(query))

        @tool
        def lookup_account(account_id: str) -> str:
            """Look up a customer account's plan by its id (AUR-NNNN)."""
            backend("account")
            if account_id not in ACCOUNTS:
                raise ToolException(f"unknown account id {account_id!r}: ids look like AUR-1001")
            plan = ("annual", "monthly")[int(account_id[-1]) % 2]
            return f"Account {account_id}: {plan} plan, Aurora H5, warranty active."

        @tool
        def calculator(expression: str) -> str:
            """Evaluate an arithmetic expression (numbers and + - * /)."""
            backend("calculator")
            return str(arithmetic(expression))

        found = [search_help_centre, lookup_account, calculator]
        for t in found:
            t.handle_tool_error = True
        return found


def arithmetic(expression: str) -> float:
    """The value of a sum of numbers and ``+ - * /``; a ToolException for anything else."""
    import ast
    import operator

    from langchain_core.tools import ToolException

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
    ops[ast.Div] = operator.truediv

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return float(ops[type(node.op)](value(node.left), value(node.right)))
        raise ToolException(f"not an arithmetic expression: {expression[:80]!r}")

    try:
        return value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ZeroDivisionError) as exc:
        raise ToolException(f"not an arithmetic expression: {expression[:80]!r}") from exc


@functools.cache
def _scripted_model_class() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    class ScriptedModel(FakeMessagesListChatModel):
        """LangChain's fake chat model, accepting ``bind_tools`` (its replies are scripted)."""

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
            return self

    return ScriptedModel
