"""A failed claim extraction falls back to the answer's sentences, says why, and is counted.

The failures are served by a real HTTP server on loopback that answers like a small judge gone
wrong (``misbehaving_server``: an extraction that loops on its first claim, one cut off at its
token limit); the schema limits that stop such a loop are checked against the real llama.cpp
server, which turns them into a grammar.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrace._judges import JudgeClient, JudgeParseError
from ragtrace._judges.exchange import parse_reply, without_limits
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._judge.claims import (
    CLAIM_MAX_CHARS,
    CLAIMS_SCHEMA,
    PROMPT_MAX_CLAIMS,
    JudgeFaithfulness,
    JudgeHallucination,
)
from ragtrace.evaluators._judge.correctness import JudgeAnswerCorrectness
from tests.judges.misbehaving_server import LOOPED_CLAIM, MisbehavingJudge, is_extraction

ANSWER = "The first Super Bowl was held on January 15, 1967. It was played in Florida."
SENTENCES = ["The first Super Bowl was held on January 15, 1967.", "It was played in Florida."]
CONTEXT = "Super Bowl I was played on January 15, 1967, at the Los Angeles Memorial Coliseum."


def client(
    server: MisbehavingJudge, behaviour: str, tmp_path: Path, **options: object
) -> JudgeClient:
    return server.client(behaviour, tmp_path, **options)


def record(response: str = ANSWER, reference: str | None = None) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="When and where was the first Super Bowl?",
        chunks=(Chunk(CONTEXT),),
        response=response,
        reference=reference,
    )


def extraction_requests(server: MisbehavingJudge, behaviour: str) -> list[dict[str, object]]:
    return [r for r in server.requests if r.get("model") == behaviour and is_extraction(r)]


def test_a_looping_extraction_gives_the_sentences_and_says_why(server, tmp_path, tally):
    [score] = JudgeFaithfulness(judge=client(server, "claims-loop", tmp_path)).evaluate(record())
    assert score.error is None and score.value == 1.0
    assert [c["claim"] for c in score.details["claims"]] == SENTENCES
    [why] = score.details["claim_fallbacks"]
    assert "repeated a claim 3 times" in why
    # the loop parsed (it is a valid list of 16): counted as an ok call, not a parse failure
    assert tally.outcomes == {"ok": 3}
    # a judge on loopback gets the schema's limits, which its grammar turns into a stop
    sent = extraction_requests(server, "claims-loop")[-1]["response_format"]
    claims = sent["json_schema"]["schema"]["properties"]["claims"]  # type: ignore[index]
    assert claims["maxItems"] == PROMPT_MAX_CLAIMS
    assert claims["items"]["maxLength"] == CLAIM_MAX_CHARS


def test_an_extraction_that_does_not_parse_gives_the_sentences_and_is_counted(
    server, tmp_path, tally
):
    before = len(extraction_requests(server, "claims-cut"))
    scores = JudgeHallucination(judge=client(server, "claims-cut", tmp_path)).evaluate(record())
    assert all(s.error is None for s in scores)
    unsupported, contradicted = scores
    assert unsupported.value == 0.0 and contradicted.value == 0.0
    assert [c["claim"] for c in unsupported.details["claims"]] == SENTENCES
    [why] = unsupported.details["claim_fallbacks"]
    assert why.startswith("claims are the sentences: the judge's extraction did not parse")
    assert len(extraction_requests(server, "claims-cut")) - before == 2  # asked, then repaired
    assert tally.outcomes == {"parse_failure": 1, "ok": 3}  # 2 claims + 1 chunk checked


def test_each_text_of_a_two_text_evaluator_reports_its_own_fallback(server, tmp_path):
    evaluator = JudgeAnswerCorrectness(
        judge=client(server, "claims-loop", tmp_path), weights=(1.0, 0.0)
    )
    [score] = evaluator.evaluate(record(reference=ANSWER + " About 61,946 people watched."))
    assert score.error is None
    assert len(score.details["claim_fallbacks"]) == 2  # the answer's and the reference's
    assert len(score.details["reference_statements"]) == 3


def test_a_good_extraction_has_no_fallback(server, tmp_path):
    # The looped claim listed once or twice is an ordinary extraction.
    extracted = parse_reply(json.dumps({"claims": [LOOPED_CLAIM] * 2}), CLAIMS_SCHEMA)
    assert extracted == {"claims": [LOOPED_CLAIM, LOOPED_CLAIM]}
    [score] = JudgeFaithfulness(
        judge=client(server, "claims-loop", tmp_path), claims="sentences"
    ).evaluate(record())
    assert score.details["claim_fallbacks"] == []


def test_limits_go_only_to_judges_on_this_machine(server, tmp_path):
    assert JudgeClient("openai/x", api_base="http://127.0.0.1:8080/v1").schema_limits is True
    assert JudgeClient("openai/x", api_base="http://localhost:11434/v1").schema_limits is True
    assert JudgeClient("gpt-4o-mini").schema_limits is False
    assert JudgeClient("openai/x", api_base="https://api.example.com/v1").schema_limits is False
    assert (
        JudgeClient("openai/x", api_base="http://[::1", schema_limits=None).schema_limits is False
    )
    assert JudgeClient("gpt-4o-mini", schema_limits=True).schema_limits is True
    # Without limits, the schema sent and the one the answer is checked against lose them both.
    remote_like = client(server, "claims-loop", tmp_path, schema_limits=False)
    [score] = JudgeFaithfulness(judge=remote_like).evaluate(record())
    sent = extraction_requests(server, "claims-loop")[-1]["response_format"]
    assert "maxItems" not in str(sent) and "maxLength" not in str(sent)
    assert score.details["claim_fallbacks"]  # the loop is still caught after parsing


def test_without_limits_strips_every_depth_but_keeps_property_names():
    schema = {
        "type": "object",
        "properties": {
            "maxLength": {"type": "string", "maxLength": 3},
            "items": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 2}},
        },
        "$defs": {"maxItems": {"type": "array", "maxItems": 4}},
        "maxProperties": 2,
    }
    assert without_limits(schema) == {
        "type": "object",
        "properties": {
            "maxLength": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string"}},
        },
        "$defs": {"maxItems": {"type": "array"}},
    }
    too_many = json.dumps({"claims": ["a"] * (PROMPT_MAX_CLAIMS + 1)})
    with pytest.raises(JudgeParseError, match="too long"):
        parse_reply(too_many, CLAIMS_SCHEMA)
    assert len(parse_reply(too_many, without_limits(CLAIMS_SCHEMA))["claims"]) == 17


@pytest.mark.judge
def test_llama_cpp_holds_a_model_to_the_limits(smol_judge: JudgeClient) -> None:
    schema = {
        "type": "object",
        "properties": {
            "colours": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 8}}
        },
        "required": ["colours"],
        "additionalProperties": False,
    }
    assert smol_judge.schema_limits is True
    reply = smol_judge.complete(
        [
            {
                "role": "user",
                "content": "List ten colours with long descriptive names. Reply with JSON: "
                '{"colours": ["..."]}',
            }
        ],
        schema=schema,
        prompt_id="limits@test",
        max_tokens=200,
    )
    assert len(reply.data["colours"]) <= 2
    assert all(len(c) <= 8 for c in reply.data["colours"])
