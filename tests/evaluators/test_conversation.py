"""Conversations: the standalone question in reference-free scoring, GPTScore's dialogue history,
sessions grouped in turn order, and the three conversation-level scores.

Each conversation-level score gets a hand-built session whose verdict is plain both ways (one
that passes, one that fails). ``conversation_relevancy`` is checked with a stand-in relevance
evaluator (its verdict given per answer) and once with the real ``answer_relevance``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from ragtrace._model import Chunk, Conversation, RagRecord, Score, Turn
from ragtrace.evaluators import Evaluator, create
from ragtrace.evaluators._conversation import (
    ConversationCompleteness,
    ConversationRelevancy,
    KnowledgeRetention,
    evaluate_sessions,
    group_sessions,
    non_answer,
)
from ragtrace.evaluators._conversation_facts import facts_of
from ragtrace.evaluators._gptscore import GptScoreQa
from ragtrace.evaluators._judge.relevance import JudgeAnswerRelevancy
from ragtrace.evaluators._question import as_asked, question_of
from tests.judges.judge_helpers import dead_judge

FOLLOW_UP = "and in winter?"
STANDALONE = "When does the city museum open in winter?"
WINTER_ANSWER = "In winter the city museum opens at 10 am and closes at 4 pm."
MUSEUM_GUIDE = (
    "The city museum opens at 9 am from June to August. In winter the city museum opens at 10 am "
    "and closes at 4 pm. A ticket to the city museum costs 12 euros. Free parking is behind the "
    "museum."
)


def rec(
    query: str,
    response: str | None = "ok",
    *,
    session: str | None = "s1",
    turn: int | None = None,
    start_ns: int = 0,
    standalone: str | None = None,
    history: Sequence[tuple[str, str]] = (),
    trace: str | None = None,
    **fields: Any,
) -> RagRecord:
    conversation = Conversation(
        session_id=session,
        turn=turn,
        history=tuple(Turn(role, content) for role, content in history),
        standalone_query=standalone,
    )
    return RagRecord(
        trace_id=trace or f"{(turn or 0) + 1:032x}",
        span_id=f"{start_ns + 1:016x}",
        query=query,
        response=response,
        start_ns=start_ns,
        conversation=conversation,
        **fields,
    )


def session(*turns: tuple[str, str | None], **fields: Any) -> list[RagRecord]:
    """One session's records: turn i asks turns[i][0] and is answered turns[i][1]."""
    return [
        rec(q, a, turn=i, start_ns=i * 1000, trace=f"{i + 1:032x}", **fields)
        for i, (q, a) in enumerate(turns)
    ]


# -- the question a follow-up is judged against ---------------------------------------------------


def test_question_of_prefers_a_non_blank_standalone_question() -> None:
    plain = rec(FOLLOW_UP)
    assert question_of(plain) == FOLLOW_UP and as_asked(plain) is plain
    rewritten = rec(FOLLOW_UP, standalone=STANDALONE)
    assert question_of(rewritten) == STANDALONE
    asked = as_asked(rewritten)
    assert asked.query == STANDALONE and asked.response == rewritten.response
    assert rewritten.query == FOLLOW_UP  # records stay as they were
    assert question_of(rec(FOLLOW_UP, standalone="  ")) == FOLLOW_UP
    no_conversation = RagRecord(trace_id="0" * 32, span_id="0" * 16, query="q")
    assert question_of(no_conversation) == "q" and as_asked(no_conversation) is no_conversation


@pytest.mark.parametrize("name", ["answer_relevance", "answer_relevance_similarity"])
def test_answer_relevance_judges_a_follow_up_against_its_standalone_question(name: str) -> None:
    evaluator = create(name)
    follow_up = rec(FOLLOW_UP, WINTER_ANSWER, standalone=STANDALONE)
    as_written = dataclasses.replace(follow_up, conversation=None)
    explicit = dataclasses.replace(follow_up, query=STANDALONE, conversation=None)
    got, literal, expected = (evaluator.evaluate(r)[0] for r in (follow_up, as_written, explicit))
    assert got.value == pytest.approx(expected.value, abs=1e-9)
    assert got.value != pytest.approx(literal.value, abs=1e-3)


def test_context_relevance_judges_the_passages_against_the_standalone_question() -> None:
    evaluator = create("context_relevance")
    chunks = (Chunk("The city museum opens at 10 am in winter."), Chunk("Tickets cost 12 euros."))
    follow_up = rec(FOLLOW_UP, WINTER_ANSWER, standalone=STANDALONE, chunks=chunks)
    explicit = dataclasses.replace(follow_up, query=STANDALONE, conversation=None)
    literal = dataclasses.replace(follow_up, conversation=None)
    got = [s.value for s in evaluator.evaluate(follow_up)]
    assert got == pytest.approx([s.value for s in evaluator.evaluate(explicit)], abs=1e-9)
    assert got[0] > evaluator.evaluate(literal)[0].value  # type: ignore[operator]


def test_judge_relevance_asks_the_judge_about_the_standalone_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evaluator = JudgeAnswerRelevancy(judge=dead_judge())
    asked: list[str] = []

    def flags(
        prompt: str, key: str, items: Sequence[dict[str, Any]], replies: list[Any]
    ) -> list[bool]:
        asked.extend(item["question"] for item in items)
        return [True for _ in items]

    monkeypatch.setattr(evaluator, "flags", flags)
    (score,) = evaluator.judge_record(rec(FOLLOW_UP, WINTER_ANSWER, standalone=STANDALONE))
    assert score.value == 1.0 and asked == [STANDALONE]


# -- GPTScore's dialogue --------------------------------------------------------------------------


def qa_history(evaluator: GptScoreQa, record: RagRecord) -> tuple[str, bool]:
    planned = evaluator._plan(record)
    assert not isinstance(planned, str), planned
    (prompt,), truncated = planned
    prefix = prompt[2]
    return prefix.split("Conversation: ", 1)[1].removesuffix("\n"), truncated


def test_gptscore_qa_reads_the_real_conversation_history() -> None:
    evaluator = GptScoreQa(aspects=["relevance"])
    history = (
        ("user", "When does the city museum open in summer?"),
        ("assistant", "From June to August it opens at 9 am."),
        ("system", "You are a helpful guide."),  # not a speaker of the dialogue
        ("user", "   "),  # blank: left out
    )
    record = rec(FOLLOW_UP, WINTER_ANSWER, standalone=STANDALONE, history=history)
    assert qa_history(evaluator, record) == (
        "Human: When does the city museum open in summer?\n"
        "AI: From June to August it opens at 9 am.\n"
        f"Human: {FOLLOW_UP}\n"  # with the history there, the follow-up as the user wrote it
        f"AI: {WINTER_ANSWER}",
        False,
    )
    # without a history the standalone question stands in for the fragment
    assert qa_history(evaluator, rec(FOLLOW_UP, WINTER_ANSWER, standalone=STANDALONE)) == (
        f"Human: {STANDALONE}\nAI: {WINTER_ANSWER}",
        False,
    )
    # without a conversation: the catalogue's two lines, as before
    plain = dataclasses.replace(record, conversation=None)
    assert qa_history(evaluator, plain) == (f"Human: {FOLLOW_UP}\nAI: {WINTER_ANSWER}", False)


def test_gptscore_qa_keeps_the_most_recent_turns_that_fit() -> None:
    evaluator = GptScoreQa(aspects=["relevance"], max_chars=30)
    history = (("user", "a" * 20), ("assistant", "b" * 20), ("user", "c" * 8))
    text, truncated = qa_history(evaluator, rec("q?", "A.", history=history))
    assert text == f"AI: {'b' * 20}\nHuman: {'c' * 8}\nHuman: q?\nAI: A." and truncated
    long_last = rec("q?", "A.", history=(("user", "old"), ("assistant", "x" * 50)))
    text, truncated = qa_history(evaluator, long_last)
    assert text == f"AI: {'x' * 30}\nHuman: q?\nAI: A." and truncated


# -- sessions -------------------------------------------------------------------------------------


def test_group_sessions_orders_by_turn_then_start_and_drops_repeats() -> None:
    first = rec("q0", turn=0, start_ns=500, trace="1" * 32)
    second = rec("q1", turn=1, start_ns=100, trace="2" * 32)  # a clock that went back
    third = rec("q2", turn=1, start_ns=300, trace="3" * 32)  # the same turn number: by time
    unnumbered = rec("q?", turn=None, start_ns=50, trace="4" * 32)
    other = rec("x", session="s2", turn=0, trace="5" * 32)
    lone = rec("no session", session=None, trace="6" * 32)
    found = group_sessions([other, third, unnumbered, second, first, lone, first])
    assert list(found) == ["s2", "s1"]
    assert [r.query for r in found["s1"]] == ["q0", "q1", "q2", "q?"]
    assert found["s2"] == [other]


def test_a_session_evaluator_refuses_records_of_several_sessions() -> None:
    mixed = [rec("q", turn=0), rec("q", session="s2", turn=1)]
    (score,) = ConversationCompleteness().evaluate(mixed)
    assert score.value is None and score.error and "several sessions" in score.error
    assert ConversationCompleteness().evaluate([]) == []


# -- knowledge_retention --------------------------------------------------------------------------


def test_facts_are_user_statements_with_a_number_or_a_name() -> None:
    assert [f.public() for f in facts_of("My order number is 12,345. Where is it?")] == [
        {
            "turn": 0,
            "statement": "My order number is 12,345.",
            "values": ["12345"],
            "subject": ["number", "order"],
        }
    ]
    (fact,) = facts_of("We live in New York and have three kids.")
    assert fact.values == {"new york": "name", "3": "number"}
    assert fact.subject == {"live", "kid"}
    assert facts_of("Where is my order 12345?") == []  # a question
    assert facts_of("Thanks, that helps a lot.") == []  # no value


RETAINED = session(
    ("Hi, my order number is 48213. It arrived broken.", "Sorry to hear that about order 48213."),
    ("Can I get a refund?", "Yes: order 48213 can be refunded within 30 days."),
    ("How long will it take?", "Refunds for your order reach your card in 5 business days."),
)


def test_knowledge_retention_passes_when_answers_keep_the_users_facts() -> None:
    (score,) = KnowledgeRetention().evaluate(RETAINED)
    assert (score.name, score.value, score.passed, score.label) == (
        "knowledge_retention",
        1.0,
        True,
        "pass",
    )
    assert score.details["checked"] == 3 and score.details["lapses"] == []
    assert score.details["session_id"] == "s1" and score.details["turns"] == 3
    assert score.evaluator_kind == "lexical" and score.threshold == 1.0


def test_knowledge_retention_fails_an_answer_that_asks_again() -> None:
    asks = dataclasses.replace(RETAINED[2], response="Could you tell me your order number?")
    forgot = [*RETAINED[:2], asks]
    (score,) = KnowledgeRetention().evaluate(forgot)
    assert (score.value, score.passed) == (pytest.approx(2 / 3), False)
    assert score.details["lapses"] == [
        {
            "turn": 2,
            "kind": "asked_again",
            "stated_in_turn": 0,
            "values": ["48213"],
            "found": [],
            "answer_sentence": "Could you tell me your order number?",
        }
    ]


def test_knowledge_retention_fails_an_answer_that_contradicts() -> None:
    turns = session(
        ("I need a table for 4 people on Friday.", "Happy to help with that."),
        ("Great, book it please.", "Done: I booked a table for 6 people on Friday at 8 pm."),
    )
    (score,) = KnowledgeRetention().evaluate(turns)
    assert (score.value, score.passed) == (0.5, False)
    (lapse,) = score.details["lapses"]
    assert (lapse["turn"], lapse["kind"], lapse["found"]) == (1, "contradicted", ["6"])
    # the same session with the right number passes
    right = [turns[0], dataclasses.replace(turns[1], response="Done: a table for 4 on Friday.")]
    assert KnowledgeRetention().evaluate(right)[0].passed is True


def test_a_fact_the_user_changed_is_the_new_one() -> None:
    turns = session(
        ("My budget is 500 euros.", "Noted."),
        ("Actually my budget is 700 euros.", "With your budget of 700 euros the Pro plan fits."),
        ("Which plan do you recommend?", "Within your budget of 700 euros, the Pro plan."),
    )
    (score,) = KnowledgeRetention().evaluate(turns)
    assert (score.value, score.passed) == (1.0, True)
    stale = [*turns[:2], dataclasses.replace(turns[2], response="Your budget of 500 euros...")]
    assert KnowledgeRetention().evaluate(stale)[0].passed is False


def test_facts_from_the_first_records_history_count() -> None:
    earlier = (("user", "I live in Lisbon."), ("assistant", "Nice city!"))
    answer = "Since you live in Porto, try Rua Alegre."
    turns = [rec("Where is the nearest store?", answer, turn=2, history=earlier)]
    (score,) = KnowledgeRetention().evaluate(turns)
    assert score.passed is False and score.details["lapses"][0]["found"] == ["porto"]


def test_knowledge_retention_skips_a_session_without_facts() -> None:
    turns = session(("What are your opening hours?", "9 to 5."), ("Thanks!", "You're welcome."))
    assert KnowledgeRetention().evaluate(turns) == []


# -- conversation_completeness --------------------------------------------------------------------


@pytest.mark.parametrize(
    "response, refused",
    [
        ("I don't know.", True),
        ("I'm sorry, but I can't help with that.", True),
        ("The documents do not mention the opening hours.", True),
        ("There is no information about that in the knowledge base.", True),
        ("I was unable to find the refund policy.", True),
        ("", True),
        ("I don't know the exact date, but it was in 1967.", False),
        ("The museum opens at 9 am.", False),
        ("I can't say for sure. " + "It opened in 1967. " * 4, False),  # a long answer
    ],
)
def test_non_answers(response: str, refused: bool) -> None:
    assert (non_answer(response) is not None) is refused


def test_conversation_completeness_passes_a_session_that_got_its_answers() -> None:
    turns = session(
        ("When does the museum open?", "At 9 am."),
        ("And on Sundays?", "I don't know; the help centre does not cover that."),
        ("How much is a ticket?", "12 euros."),
    )
    (score,) = ConversationCompleteness().evaluate(turns)
    assert (score.value, score.passed) == (pytest.approx(2 / 3), True)
    assert score.details["answered"] == 2
    (missed,) = score.details["unanswered"]
    assert missed["turn"] == 1 and missed["reason"].startswith("refusal")


def test_conversation_completeness_fails_a_session_left_unanswered() -> None:
    turns = session(
        ("When does the museum open?", "I don't know."),
        ("And on Sundays?", None),
        ("How much is a ticket?", "12 euros."),
    )
    turns[2] = dataclasses.replace(turns[2], error="TimeoutError: model", status="error")
    (score,) = ConversationCompleteness().evaluate(turns)
    assert (score.value, score.passed, score.label) == (0.0, False, "fail")
    assert [m["reason"] for m in score.details["unanswered"]] == [
        'refusal: "i don\'t know"',
        "empty response",
        "request error",
    ]


# -- conversation_relevancy -----------------------------------------------------------------------


class KeywordRelevance(Evaluator):
    """A stand-in for answer_relevance: relevant when the answer shares a word with the query."""

    name: ClassVar[str] = "keyword_relevance"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    threshold = 0.5

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def evaluate(self, record: RagRecord) -> list[Score]:
        query = question_of(record) or ""
        self.asked.append(query)
        words = {w.strip("?.,").lower() for w in query.split() if len(w) > 3}
        shared = words & {w.strip("?.,").lower() for w in (record.response or "").split()}
        return [self.score(1.0 if shared else 0.0)]


def test_conversation_relevancy_passes_a_session_that_stays_on_topic() -> None:
    turns = session(
        ("When does the museum open?", "The museum opens at 9 am."),
        ("How much is a museum ticket?", "A museum ticket costs 12 euros."),
    )
    (score,) = ConversationRelevancy(relevance=KeywordRelevance()).evaluate(turns)
    assert (score.value, score.passed, score.evaluator_kind) == (1.0, True, "model")
    assert [v["by"] for v in score.details["turn_verdicts"]] == ["question", "question"]


def test_conversation_relevancy_fails_a_session_of_off_topic_answers() -> None:
    turns = session(
        ("When does the museum open?", "Bananas are rich in potassium."),
        ("How much is a museum ticket?", "The football final ended in a draw."),
        ("Is there parking near the museum?", "Parking is free behind the museum."),
    )
    (score,) = ConversationRelevancy(relevance=KeywordRelevance()).evaluate(turns)
    assert (score.value, score.passed) == (pytest.approx(1 / 3), False)
    assert [v["relevant"] for v in score.details["turn_verdicts"]] == [False, False, True]


def test_a_follow_up_is_judged_with_the_window_of_earlier_questions() -> None:
    relevance = KeywordRelevance()
    turns = session(
        ("When does the city museum open in summer?", "The museum opens at 9 am in summer."),
        (FOLLOW_UP, "The museum opens at 10 am then."),
    )
    (score,) = ConversationRelevancy(relevance=relevance).evaluate(turns)
    assert (score.value, score.passed) == (1.0, True)
    assert [v["by"] for v in score.details["turn_verdicts"]] == ["question", "window"]
    assert relevance.asked[-1] == f"When does the city museum open in summer?\n{FOLLOW_UP}"
    (alone,) = ConversationRelevancy(relevance=KeywordRelevance(), window=1).evaluate(turns)
    assert (alone.value, alone.passed) == (0.5, True)  # half: still at the threshold
    # a rewritten follow-up is judged against its standalone question, not the window
    rewritten = [turns[0], rec(FOLLOW_UP, "At 10 am then.", turn=1, standalone=STANDALONE)]
    (score,) = ConversationRelevancy(relevance=KeywordRelevance()).evaluate(rewritten)
    assert [v["by"] for v in score.details["turn_verdicts"]] == ["question", "question"]
    assert score.details["turn_verdicts"][1]["relevant"] is False


def test_conversation_relevancy_leaves_unanswered_turns_out() -> None:
    turns = session(("When does the museum open?", "I don't know."), ("Thanks", None))
    assert ConversationRelevancy(relevance=KeywordRelevance()).evaluate(turns) == []


def test_conversation_relevancy_with_the_real_answer_relevance() -> None:
    evaluator = ConversationRelevancy()
    assert evaluator.relevance.name == "answer_relevance"
    guide = (Chunk(MUSEUM_GUIDE, id="guide"),)
    on_topic = session(
        ("When does the city museum open in summer?", "It opens at 9 am from June to August."),
        (FOLLOW_UP, WINTER_ANSWER),
        ("How much does a ticket cost?", "A ticket to the city museum costs 12 euros."),
        chunks=guide,
    )
    (score,) = evaluator.evaluate(on_topic)
    assert score.passed is True and score.model
    off_topic = session(
        ("When does the city museum open in summer?", "Bananas grow in tropical climates."),
        ("How much does a ticket cost?", "The football final ended in a draw last night."),
        ("Is there parking?", "Penguins live in the southern hemisphere."),
        chunks=guide,
    )
    (score,) = evaluator.evaluate(off_topic)
    assert score.passed is False and score.value is not None and score.value < 0.5


# -- all of them ----------------------------------------------------------------------------------


def test_evaluate_sessions_scores_each_session() -> None:
    good = session(
        ("My order number is 48213.", "Thanks, order 48213 is on its way."),
        ("When will order 48213 arrive?", "Order 48213 arrives on Monday."),
    )
    bad = [
        dataclasses.replace(
            r, conversation=Conversation(session_id="s2", turn=i), trace_id=f"{i + 7:032x}"
        )
        for i, r in enumerate(good)
    ]
    bad[1] = dataclasses.replace(bad[1], response="What is your order number?")
    chosen = [KnowledgeRetention(), ConversationCompleteness()]
    found = evaluate_sessions([*good, *bad], chosen)
    assert {s: [(x.name, x.passed) for x in scores] for s, scores in found.items()} == {
        "s1": [("knowledge_retention", True), ("conversation_completeness", True)],
        "s2": [("knowledge_retention", False), ("conversation_completeness", True)],
    }


def test_a_failing_relevance_evaluator_gives_an_error_score() -> None:
    class Broken(KeywordRelevance):
        def evaluate(self, record: RagRecord) -> list[Score]:
            raise RuntimeError("model gone")

    (score,) = ConversationRelevancy(relevance=Broken()).evaluate(session(("q", "a")))
    assert score.value is None and score.error == "RuntimeError: model gone"
