"""The sampler: trace-id ratio (as OpenTelemetry decides it), rules, rates, budgets, cascades."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from ragtrace._model import Chunk, EvaluatorKind, RagRecord, Score
from ragtrace._pipeline.sampling import Sampler, SamplingDecision, ratio_bound
from ragtrace._pipeline.sampling.rules import Cascade, Rule
from ragtrace.evaluators import FunctionEvaluator
from ragtrace.evaluators._base import Evaluator


def ev(name: str, kind: EvaluatorKind = "lexical", cost_usd: float = 0.0) -> Evaluator:
    return FunctionEvaluator(lambda r: None, name=name, kind=kind, cost_usd=cost_usd)


def rec(trace_id: str = "0" * 32, **fields: Any) -> RagRecord:
    return RagRecord(trace_id=trace_id, span_id="0" * 16, query="q", **fields)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


A, B, J = ev("a"), ev("b"), ev("j", "judge", 1.0)


def one(sampler: Sampler, record: RagRecord, evaluator: Evaluator = A) -> SamplingDecision:
    [decision] = sampler.select(record, [evaluator])
    return decision


# --- ratio -----------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.0, 1e-9, 1e-3, 0.1, 0.25, 1 / 3, 0.5, 0.9, 0.999999, 1.0])
def test_ratio_agrees_with_opentelemetry_trace_id_ratio_based(rate: float) -> None:
    rng = random.Random(rate)
    otel = TraceIdRatioBased(rate)
    sampler = Sampler(rate)
    assert ratio_bound(rate) == otel.bound
    ids = [rng.getrandbits(128) for _ in range(3000)]
    # ids right at the bound, with random high bits
    ids += [(rng.getrandbits(64) << 64) | (otel.bound + d) % (1 << 64) for d in (-2, -1, 0, 1)]
    for tid in ids:
        expected = otel.should_sample(None, tid, "rag").decision.is_sampled()  # type: ignore[no-untyped-call]
        decision = one(sampler, rec(format(tid, "032x")))
        assert decision.sampled is expected, (rate, format(tid, "032x"))
        assert decision.reason == ("ratio" if expected else "ratio_out")


def test_ratio_share_is_close_to_rate() -> None:
    rng = random.Random(3)
    sampler = Sampler(0.2)
    kept = sum(
        one(sampler, rec(format(rng.getrandbits(128), "032x"))).sampled for _ in range(20000)
    )
    assert 3600 < kept < 4400


def test_rate_zero_and_one_edges() -> None:
    lowest, highest = "0" * 32, "f" * 32
    assert one(Sampler(0.0), rec(lowest)) == SamplingDecision("a", False, "ratio_out")
    assert one(Sampler(0.0), rec(highest)).sampled is False
    assert one(Sampler(1.0), rec(lowest)) == SamplingDecision("a", True, "ratio")
    assert one(Sampler(1.0), rec(highest)) == SamplingDecision("a", True, "ratio")
    assert SamplingDecision("a", True, "ratio").decision == "sampled"
    assert SamplingDecision("a", False, "ratio_out").decision == "dropped"


def test_decision_uses_only_the_low_64_bits_and_is_deterministic() -> None:
    sampler = Sampler(0.5)
    below = format((1 << 63) - 1, "016x")  # just below half of 2**64
    above = format(1 << 63, "016x")
    for high in ("0" * 16, "f" * 16, "0123456789abcdef"):
        assert one(sampler, rec(high + below)).sampled is True
        assert one(sampler, rec(high + above)).sampled is False
    assert [one(sampler, rec(high + below)) for _ in range(3)] == [
        one(sampler, rec(high + below))
    ] * 3


def test_non_hex_trace_id_is_hashed_deterministically() -> None:
    sampler = Sampler(0.5)
    decisions = {one(sampler, rec(f"row-{i}")).sampled for i in range(200)}
    assert decisions == {True, False}
    assert one(sampler, rec("row-7")) == one(sampler, rec("row-7"))


def test_evaluator_rate_replaces_the_global_rate() -> None:
    record = rec("f" * 32)  # sampled only at rate 1
    up = Sampler(0.0, evaluator_rates={"b": 1.0})
    assert up.select(record, [A, B]) == [
        SamplingDecision("a", False, "ratio_out"),
        SamplingDecision("b", True, "ratio"),
    ]
    down = Sampler(1.0, evaluator_rates={"b": 0.0})
    assert [d.sampled for d in down.select(record, [A, B])] == [True, False]
    mid = Sampler(0.9, evaluator_rates={"b": 0.1})
    tid = format(ratio_bound(0.5), "032x")
    assert [d.sampled for d in mid.select(rec(tid), [A, B])] == [True, False]


# --- rules -----------------------------------------------------------------------------------


def test_first_matching_rule_decides_and_beats_the_ratio() -> None:
    error = rec("f" * 32, status="error", attributes={"metadata": {"route": "health"}})
    always = Rule("always", status=("error",))
    never = Rule("never", route="health")
    assert one(Sampler(0.0, rules=[always]), error) == SamplingDecision(
        "a", True, "rule:always_status_error"
    )
    assert one(Sampler(1.0, rules=[never]), error) == SamplingDecision(
        "a", False, "rule:never_route_health"
    )
    assert one(Sampler(0.0, rules=[never, always]), error).reason == "rule:never_route_health"
    assert one(Sampler(0.0, rules=[always, never]), error).reason == "rule:always_status_error"
    # a rule that does not match falls through to the next one, then to the ratio
    ok = rec("0" * 32)
    assert one(Sampler(1.0, rules=[always, never]), ok) == SamplingDecision("a", True, "ratio")


def test_rule_applies_only_to_its_evaluators() -> None:
    record = rec("f" * 32, status="error")
    sampler = Sampler(
        0.0,
        evaluator_rates={"b": 1.0},
        rules=[Rule("never", evaluators=("b",), name="no_b"), Rule("always", status=("error",))],
    )
    assert sampler.select(record, [A, B]) == [
        SamplingDecision("a", True, "rule:always_status_error"),
        SamplingDecision("b", False, "rule:no_b"),
    ]


META = {"metadata": {"route": "chat", "tenant": 42, "tier": "gold", "beta": True}}


@pytest.mark.parametrize(
    ("rule", "matching", "other"),
    [
        (Rule("always", status=("error", "abandoned")), {"status": "abandoned"}, {"status": "ok"}),
        (Rule("always", status="incomplete"), {"status": "incomplete"}, {}),  # type: ignore[arg-type]
        (Rule("always", empty_retrieval=True), {}, {"chunks": (Chunk("x"),)}),
        (Rule("always", empty_retrieval=False), {"chunks": (Chunk("x"),)}, {}),
        (
            Rule("always", top_score_below=0.5),
            {"chunks": (Chunk("x", score=0.2), Chunk("y"), Chunk("z", score=0.4))},
            {"chunks": (Chunk("x", score=0.2), Chunk("y", score=0.5))},
        ),
        (Rule("always", top_score_below=0.5), {"chunks": (Chunk("x", score=0.1),)}, {}),
        (
            Rule("always", top_score_below=0.5),
            {"chunks": (Chunk("x", score=0.1),)},
            {"chunks": (Chunk("x"), Chunk("y"))},  # no scored chunk: no match
        ),
        (Rule("always", app="shop"), {"app": "shop"}, {"app": "blog"}),
        (Rule("always", route="chat"), {"attributes": META}, {"attributes": {}}),
        (Rule("always", route="chat"), {"attributes": META}, {"attributes": {"metadata": "x"}}),
        (Rule("always", tenant="42"), {"attributes": META}, {"attributes": {"metadata": {}}}),
        (
            Rule("always", metadata={"tier": "gold", "beta": "True"}),
            {"attributes": META},
            {"attributes": {"metadata": {"tier": "gold", "beta": False}}},
        ),
        (Rule("always", metadata={"tenant": 42}), {"attributes": META}, {"attributes": {}}),  # type: ignore[dict-item]
        (Rule("always", feedback=True), {"attributes": {"feedback": {"thumbs": "down"}}}, {}),
        (Rule("always", feedback=False), {}, {"attributes": {"feedback": 1}}),
        (
            Rule("always", status=("error",), route="chat"),
            {"status": "error", "attributes": META},
            {"status": "ok", "attributes": META},
        ),
    ],
)
def test_each_rule_condition(rule: Rule, matching: dict[str, Any], other: dict[str, Any]) -> None:
    sampler = Sampler(0.0, rules=[rule])
    assert rule.matches(rec(**matching)) is True
    assert rule.matches(rec(**other)) is False
    assert one(sampler, rec(**matching)) == SamplingDecision("a", True, rule.reason)
    assert one(sampler, rec(**other)) == SamplingDecision("a", False, "ratio_out")


def test_rule_names_are_derived_or_validated() -> None:
    assert Rule("always").name == "always"
    assert Rule("never", route="healthcheck").reason == "rule:never_route_healthcheck"
    assert Rule("never", route="/health check").name == "never_route"  # values only if safe
    assert Rule("always", top_score_below=0.3, feedback=False).name == (
        "always_top_score_below_no_feedback"
    )
    assert Rule("always", metadata={"k": "v"}, app="shop").name == "always_app_shop_metadata"
    assert len(Rule("always", route="r" * 80).name) <= 48
    assert Rule("always", name="Errors_1").reason == "rule:Errors_1"
    for bad in ("has space", "1st", "a-b", "x" * 49, "trace:abc"):
        with pytest.raises(ValueError, match="Rule: name must be a short identifier"):
            Rule("always", name=bad)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"action": "sometimes"}, "Rule: action must be 'always' or 'never'"),
        ({"status": ("failed",)}, "Rule: status must be some of ok, error, abandoned, incomplete"),
        ({"status": ()}, "Rule: status must be some of"),
        ({"empty_retrieval": 1}, "Rule: empty_retrieval must be a bool"),
        ({"feedback": "yes"}, "Rule: feedback must be a bool"),
        ({"top_score_below": "0.5"}, "Rule: top_score_below must be a finite number"),
        ({"top_score_below": float("nan")}, "Rule: top_score_below must be a finite number"),
        ({"route": 5}, "Rule: route must be a str"),
        ({"metadata": {"k": [1]}}, "Rule: metadata['k'] must be a string or number"),
        ({"evaluators": ("",)}, "Rule: evaluators must be evaluator names"),
    ],
)
def test_rule_validation(kwargs: dict[str, Any], message: str) -> None:
    kwargs.setdefault("action", "always")
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        Rule(**kwargs)


# --- construction ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 1.5}, r"Sampler: rate must be in \[0, 1\], got 1.5"),
        ({"rate": -0.1}, r"Sampler: rate must be in \[0, 1\]"),
        ({"rate": True}, "Sampler: rate must be a finite number"),
        ({"rate": float("nan")}, "Sampler: rate must be a finite number"),
        ({"evaluator_rates": {"a": 2}}, r"Sampler: evaluator_rates\['a'\] must be in \[0, 1\]"),
        ({"evaluator_rates": {"": 1}}, "Sampler: evaluator_rates keys must be evaluator names"),
        ({"evaluator_rates": [("a", 1)]}, "Sampler: evaluator_rates must be a mapping"),
        ({"rules": ["always"]}, r"Sampler: rules\[0\] must be a Rule, got str"),
        ({"rate_limits": {"a": -1}}, r"Sampler: rate_limits\['a'\] must be >= 0"),
        ({"rate_limits": {"a": 1}, "burst": {"a": 0.5}}, r"Sampler: burst\['a'\] must be >= 1"),
        ({"burst": {"a": 2}}, r"Sampler: burst\['a'\] given for an evaluator without rate_limits"),
        ({"hourly_budget_usd": -5}, "Sampler: hourly_budget_usd must be >= 0"),
        ({"hourly_budget_usd": float("inf")}, "Sampler: hourly_budget_usd must be a finite"),
        ({"cascades": [("j", "a")]}, r"Sampler: cascades\[0\] must be a Cascade"),
        (
            {"cascades": [Cascade("a", "b"), Cascade("b", "c"), Cascade("c", "a")]},
            "Sampler: cascades form a cycle: a -> b -> c -> a",
        ),
        ({"clock": 5}, "Sampler: clock must be a callable"),
        ({"on_decision": "print"}, "Sampler: on_decision must be a callable"),
    ],
)
def test_sampler_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Sampler(**kwargs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("a", "a"), "Cascade: 'a' cannot follow itself"),
        (("", "a"), "Cascade: evaluator must be an evaluator name"),
        (("a", "b", 0.8, 0.2), r"Cascade: low \(0.8\) must not exceed high \(0.2\)"),
        (("a", "b", "0"), "Cascade: low must be a finite number"),
    ],
)
def test_cascade_validation(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Cascade(*args)


# --- admit: token bucket and budget ----------------------------------------------------------


def test_token_bucket_refills_over_time() -> None:
    clock = Clock()
    sampler = Sampler(rate_limits={"a": 2.0}, burst={"a": 3}, clock=clock)
    assert [sampler.admit(A) for _ in range(4)] == [(True, "admitted")] * 3 + [
        (False, "rate_limited")
    ]
    assert sampler.admit(B) == (True, "admitted")  # no limit for b
    clock.now += 0.25  # half a token
    assert sampler.admit(A) == (False, "rate_limited")
    clock.now += 0.25  # one token
    assert sampler.admit(A) == (True, "admitted")
    assert sampler.admit(A) == (False, "rate_limited")
    clock.now += 100  # refills to the bucket size, not beyond
    assert [sampler.admit(A)[0] for _ in range(5)] == [True, True, True, False, False]
    clock.now -= 50  # a clock going back takes nothing and gives nothing
    assert sampler.admit(A) == (False, "rate_limited")
    assert sampler.stats() == {"dropped:rate_limited": 6}


def test_default_burst_is_max_of_one_and_rate() -> None:
    clock = Clock()
    slow = Sampler(rate_limits={"a": 0.5}, clock=clock)
    assert [slow.admit(A)[0] for _ in range(2)] == [True, False]
    clock.now += 2
    assert slow.admit(A)[0] is True
    fast = Sampler(rate_limits={"a": 4}, clock=clock)
    assert [fast.admit(A)[0] for _ in range(5)] == [True] * 4 + [False]
    never = Sampler(rate_limits={"a": 0}, clock=clock)
    assert [never.admit(A)[0] for _ in range(2)] == [True, False]
    clock.now += 1e6
    assert never.admit(A)[0] is False


def test_hourly_budget_charges_only_judges_and_resets_each_hour() -> None:
    clock = Clock()
    judge = ev("j", "judge", cost_usd=0.1)
    pricey_model = ev("m", "model", cost_usd=100.0)
    sampler = Sampler(hourly_budget_usd=1.0, clock=clock)
    assert sampler.budget_left_usd() == 1.0
    assert all(sampler.admit(judge)[0] for _ in range(10))  # 10 x 0.1 = 1.0 exactly
    assert sampler.admit(judge) == (False, "budget_exhausted")
    assert sampler.admit(pricey_model) == (True, "admitted")  # not a judge: never charged
    assert sampler.budget_left_usd() == pytest.approx(0.0)
    clock.now += 3599.9
    assert sampler.admit(judge) == (False, "budget_exhausted")
    clock.now += 0.1  # a new hour window
    assert sampler.budget_left_usd() == 1.0
    assert sampler.admit(judge) == (True, "admitted")
    assert sampler.budget_left_usd() == pytest.approx(0.9)
    clock.now += 3 * 3600 + 10  # windows stay aligned to the start
    assert sampler.admit(ev("big", "judge", cost_usd=1.0)) == (True, "admitted")
    clock.now += 3590
    assert sampler.admit(judge) == (True, "admitted")
    assert sampler.stats() == {"dropped:budget_exhausted": 2}


def test_budget_and_rate_limit_together() -> None:
    clock = Clock()
    sampler = Sampler(rate_limits={"j": 1}, hourly_budget_usd=1.5, clock=clock)
    assert sampler.admit(J) == (True, "admitted")
    assert sampler.admit(J) == (False, "rate_limited")  # no token: the budget is not charged
    clock.now += 1
    assert sampler.admit(J) == (False, "budget_exhausted")  # 1 + 1 > 1.5: token kept
    assert Sampler(clock=clock).budget_left_usd() is None
    assert Sampler(hourly_budget_usd=0, clock=clock).admit(ev("free", "judge"))[0] is True


def test_admit_is_thread_safe() -> None:
    clock = Clock()
    sampler = Sampler(rate_limits={"a": 10.0}, burst={"a": 50}, clock=clock)
    admitted: list[int] = []
    start = threading.Barrier(16)

    def hammer() -> None:
        start.wait()
        admitted.append(sum(sampler.admit(A)[0] for _ in range(500)))

    threads = [threading.Thread(target=hammer) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(admitted) == 50
    clock.now += 2.0  # 20 more tokens
    threads = [threading.Thread(target=hammer) for _ in range(16)]
    start.reset()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(admitted) == 70
    assert sampler.stats() == {"dropped:rate_limited": 2 * 16 * 500 - 70}


def test_select_is_thread_safe_in_its_counts() -> None:
    sampler = Sampler(0.5)
    rng = random.Random(1)
    ids = [format(rng.getrandbits(128), "032x") for _ in range(400)]

    def run() -> None:
        for tid in ids:
            sampler.select(rec(tid), [A, B])

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = sampler.stats()
    assert sum(stats.values()) == 8 * 400 * 2
    kept = sum(one(Sampler(0.5), rec(tid)).sampled for tid in ids)
    assert stats["sampled:ratio"] == 8 * 2 * kept


# --- cascades --------------------------------------------------------------------------------


def score(name: str, value: float | None) -> Score:
    return Score(name, value)


def test_cascade_band() -> None:
    sampler = Sampler(cascades=[Cascade("j", after="g", low=0.3, high=0.7)])
    assert sampler.cascade_ready("a", {}) == (True, "no_cascade")
    assert sampler.cascade_ready("j", {"g": score("g", 0.3)}) == (True, "cascade_in_band")
    assert sampler.cascade_ready("j", {"g": score("g", 0.7)}) == (True, "cascade_in_band")
    assert sampler.cascade_ready("j", {"g": score("g", 0.71)}) == (False, "cascade_out_of_band")
    assert sampler.cascade_ready("j", {"g": score("g", 0.1)}) == (False, "cascade_out_of_band")
    assert sampler.cascade_ready("j", {}) == (False, "cascade_missing")
    assert sampler.cascade_ready("j", {"g": score("g", None)}) == (False, "cascade_missing")
    assert sampler.stats() == {"dropped:cascade_out_of_band": 2, "dropped:cascade_missing": 2}


def test_several_cascades_on_one_evaluator_must_all_hold() -> None:
    sampler = Sampler(cascades=[Cascade("j", "g", 0.0, 0.5), Cascade("j", "r", 0.5, 1.0)])
    scores: Mapping[str, Score] = {"g": score("g", 0.2), "r": score("r", 0.9)}
    assert sampler.cascade_ready("j", scores) == (True, "cascade_in_band")
    assert sampler.cascade_ready("j", {**scores, "r": score("r", 0.1)})[1] == "cascade_out_of_band"
    assert sampler.cascade_ready("j", {"g": score("g", 0.2)})[1] == "cascade_missing"


def test_cascade_order_is_cheap_first_and_dependencies_first() -> None:
    lex1, lex2 = ev("lex1"), ev("lex2")
    model, judge1, judge2 = ev("model", "model"), ev("judge1", "judge"), ev("judge2", "judge")
    human = ev("human", "human")
    plain = Sampler()
    given = [human, judge1, model, lex1, judge2, lex2]
    assert [e.name for e in plain.cascade_order(given)] == [
        "lex1", "lex2", "model", "judge1", "judge2", "human"
    ]  # fmt: skip
    # judge1 waits for judge2; a lexical one made to wait for the model runs after it
    sampler = Sampler(cascades=[Cascade("judge1", "judge2"), Cascade("lex1", "model")])
    assert [e.name for e in sampler.cascade_order(given)] == [
        "lex2", "model", "lex1", "judge2", "judge1", "human"
    ]  # fmt: skip
    # a dependency that is not configured is ignored by the order (cascade_ready reports it)
    assert [e.name for e in sampler.cascade_order([judge1, lex1])] == ["lex1", "judge1"]


# --- reporting -------------------------------------------------------------------------------


def test_every_decision_is_counted_and_reported() -> None:
    seen: list[tuple[str, str]] = []
    clock = Clock()
    sampler = Sampler(
        0.0,
        rules=[Rule("always", status=("error",), name="errors")],
        rate_limits={"a": 1},
        cascades=[Cascade("b", "a", 0.5, 1.0)],
        clock=clock,
        on_decision=lambda decision, reason: seen.append((decision, reason)),
    )
    sampler.select(rec(status="error"), [A, B])
    sampler.select(rec(), [A, B])
    sampler.admit(A)
    sampler.admit(A)
    sampler.cascade_ready("b", {"a": score("a", 0.1)})
    sampler.cascade_ready("b", {"a": score("a", 0.9)})
    assert seen == [
        ("sampled", "rule:errors"),
        ("sampled", "rule:errors"),
        ("dropped", "ratio_out"),
        ("dropped", "ratio_out"),
        ("dropped", "rate_limited"),
        ("dropped", "cascade_out_of_band"),
    ]
    assert sampler.stats() == {
        "sampled:rule:errors": 2,
        "dropped:ratio_out": 2,
        "dropped:rate_limited": 1,
        "dropped:cascade_out_of_band": 1,
    }


def test_select_never_raises() -> None:
    calls: list[str] = []

    def broken_callback(decision: str, reason: str) -> None:
        calls.append(reason)
        raise RuntimeError("metrics down")

    class BadMeta(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            raise RuntimeError("boom")

    sampler = Sampler(
        1.0,
        rules=[Rule("never", route="x", name="no_x")],
        on_decision=broken_callback,
    )
    record = rec(attributes={"metadata": BadMeta()})
    assert sampler.select(record, [A]) == [
        SamplingDecision("a", True, "ratio")
    ]  # the rule did not match
    assert calls == ["ratio"]

    class NoName:
        @property
        def name(self) -> str:
            raise RuntimeError("no name")

    assert sampler.select(rec(), [NoName()]) == []  # type: ignore[list-item]
    assert Sampler(1.0).select(None, [A]) == [SamplingDecision("a", False, "sampler_error")]  # type: ignore[arg-type]
    assert Sampler(1.0).admit(None) == (False, "sampler_error")  # type: ignore[arg-type]


def test_replace_keeps_the_settings_with_fresh_state() -> None:
    clock = Clock()
    seen: list[str] = []
    sampler = Sampler(0.0, evaluator_rates={"b": 1.0}, rate_limits={"a": 1}, clock=clock)
    sampler.admit(A)
    copy = sampler.replace(on_decision=lambda d, r: seen.append(r))
    assert copy.rate == 0.0 and copy.evaluator_rates == {"b": 1.0}
    assert copy.admit(A) == (True, "admitted")
    copy.select(rec("f" * 32), [A, B])
    assert seen == ["ratio_out", "ratio"]
    assert sampler.replace(rate=1.0).rate == 1.0
    assert "rate=0.0" in repr(sampler)


def test_judges_that_report_spend_are_charged_what_they_really_cost():
    from ragtrace.evaluators._judge.base import JudgeEvaluator

    class Reporting(JudgeEvaluator):
        name = "judge_reporting"

        def judge_record(self, record):
            return []

    now = [0.0]
    sampler = Sampler(hourly_budget_usd=1.0, clock=lambda: now[0])
    judge = Reporting(cost_usd=0.4)
    assert sampler.admit(judge) == (True, "admitted")
    assert sampler.budget_left_usd() == 1.0  # the estimate is not charged...
    sampler.charge(0.7)  # ...the real spend is
    assert sampler.budget_left_usd() == pytest.approx(0.3)
    assert sampler.admit(judge)[1] == "budget_exhausted"  # 0.7 + estimate 0.4 > 1.0
    for bad in (None, -1.0, float("nan"), float("inf")):
        sampler.charge(bad)
    assert sampler.budget_left_usd() == pytest.approx(0.3)
    now[0] = 3600.0
    assert sampler.admit(judge) == (True, "admitted")  # a new hour


# --- choose: the request path's form of select -----------------------------------------------


def test_choose_picks_and_counts_exactly_what_select_decides() -> None:
    rules = [Rule("always", status=("error",), evaluators=("b",)), Rule("never", route="health")]
    evaluators = [A, B, J, ev("c")]
    rng = random.Random(7)
    for i in range(300):
        record = rec(
            f"{rng.getrandbits(128):032x}",
            status="error" if i % 3 == 0 else "ok",
            attributes={"metadata": {"route": "health" if i % 5 == 0 else "chat"}},
        )
        one_way = Sampler(0.4, evaluator_rates={"c": 0.9}, rules=rules)
        other_way = Sampler(0.4, evaluator_rates={"c": 0.9}, rules=rules)
        decisions = one_way.select(record, evaluators)
        chosen, tally = other_way.choose(record, evaluators)
        assert chosen == tuple(d.evaluator for d in decisions if d.sampled)
        expected: dict[tuple[str, str], int] = {}
        for d in decisions:
            expected[(d.decision, d.reason)] = expected.get((d.decision, d.reason), 0) + 1
        assert tally == expected
        assert other_way.stats() == one_way.stats()


def test_choose_reports_each_decision_to_on_decision_and_survives_a_broken_rule() -> None:
    seen: list[tuple[str, str]] = []
    sampler = Sampler(1.0, on_decision=lambda d, r: seen.append((d, r)))
    assert sampler.choose(rec(), [A, B]) == (("a", "b"), {("sampled", "ratio"): 2})
    assert seen == [("sampled", "ratio"), ("sampled", "ratio")]

    class Exploding(Rule):
        def matches(self, record: RagRecord) -> bool:
            raise RuntimeError("rule bug")

    broken = Sampler(1.0, rules=[Exploding("never", status=("ok",))])
    chosen, _ = broken.choose(rec(), [A])
    assert chosen == ("a",)  # a rule that raises does not match; the ratio decides


def test_choose_asks_a_subclass_that_overrides_select() -> None:
    class OnlyB(Sampler):
        def select(self, record: RagRecord, evaluators: Any) -> list[SamplingDecision]:
            return [SamplingDecision(e.name, e.name == "b", "custom") for e in evaluators]

    assert OnlyB().choose(rec(), [A, B]) == (
        ("b",),
        {("dropped", "custom"): 1, ("sampled", "custom"): 1},
    )
