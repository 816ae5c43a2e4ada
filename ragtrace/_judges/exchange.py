"""One judge question and its answer: what is sent, how the answer is read, what comes back.

``JudgeRequest.build`` normalises the caller's chat messages and per-call settings. The request
then gives the parameters sent to litellm (with the schema as ``response_format``), the
conversation of a repair round after an unparseable answer, and the validated JSON of an
answer::

    request = JudgeRequest.build(messages, schema=SCHEMA, prompt_id="p@v1", temperature=0.0,
                                 max_tokens=512)
    data = request.parse(answer_text)  # raises JudgeParseError

Reading an answer: servers that honour ``response_format`` return bare JSON; others wrap it in
a Markdown fence or add a sentence around it. ``parse_reply`` takes the first JSON value in the
text (after removing a fence), then validates it strictly against the JSON schema. Anything
else is a ``JudgeParseError``: a parse failure is its own outcome, never a guessed score.

Length and count limits (``maxItems``, ``maxLength``...) bound what a grammar lets a small model
write: a 0.5B judge that starts repeating one list item stops at ``maxItems`` instead of running
into its token limit with unclosed JSON. Hosted providers' strict modes reject or ignore such
keywords, so ``without_limits`` removes them for judges that are not on this machine.

What comes back: ``JudgeReply`` is what ``JudgeClient.complete`` returns.
``RawAnswer.from_response`` reads the text, token counts and log-probabilities out of one
litellm response; ``logprobs_to_json`` and ``logprobs_from_json`` carry log-probabilities
through the response cache.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ragtrace._judges.usage import JudgeParseError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def parse_reply(text: str, schema: Mapping[str, Any] | None) -> Any:
    """The JSON value in ``text``, validated against ``schema`` (None: any JSON)."""
    value = _first_json(text)
    if schema is not None:
        errors = sorted(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value), key=str)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
            raise JudgeParseError(
                f"answer does not match the schema at {where}: {errors[0].message}", text
            )
    return value


def _first_json(text: str) -> Any:
    if not isinstance(text, str) or not text.strip():
        raise JudgeParseError("empty answer", text if isinstance(text, str) else "")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start, char in enumerate(candidate):
            if char in "{[":
                try:
                    value, _ = decoder.raw_decode(candidate, start)
                except json.JSONDecodeError:
                    continue
                return value
    raise JudgeParseError("no JSON value in the answer", text)


LIMIT_KEYWORDS = frozenset(
    {"maxItems", "minItems", "maxLength", "minLength", "maxProperties", "minProperties"}
)


def without_limits(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without length and count limits (``LIMIT_KEYWORDS``), at every depth."""
    return _strip(schema)  # type: ignore[no-any-return]


_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


def _strip(value: Any, names: bool = False) -> Any:
    """Drop limit keywords; the keys of ``names`` maps (``properties``...) are names, kept."""
    if isinstance(value, Mapping):
        return {
            k: _strip(v, names=not names and k in _NAME_MAPS)
            for k, v in value.items()
            if names or k not in LIMIT_KEYWORDS
        }
    if isinstance(value, list | tuple):
        return [_strip(v) for v in value]
    return value


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    import jsonschema  # type: ignore[import-untyped]  # the judge extra; needed once a judge is used

    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def response_format(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The OpenAI ``response_format`` asking for JSON that matches ``schema``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "verdict"
    return {
        "type": "json_schema",
        "json_schema": {"name": safe, "schema": dict(schema), "strict": True},
    }


REPAIR_ANSWER_CHARS = 2000  # how much of an unparseable answer a repair round shows the judge


@dataclass(frozen=True)
class JudgeRequest:
    """One question for the judge.

    Attributes:
        messages: The chat messages, as ``{"role", "content"}`` string pairs.
        schema: The JSON schema the answer must match (None: any JSON).
        params: Sampling parameters (``temperature``, ``max_tokens``, ``seed``, logprobs).
        prompt_id: The prompt's id and version, for the cache and the accounting.
    """

    messages: tuple[dict[str, str], ...]
    schema: Mapping[str, Any] | None
    params: dict[str, Any]
    prompt_id: str = ""

    @classmethod
    def build(
        cls,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None,
        prompt_id: str,
        temperature: float,
        max_tokens: int,
        seed: int | None = None,
        logprobs: int | None = None,
    ) -> JudgeRequest:
        """A request; ``logprobs=k`` asks for the top-k alternatives of every output token."""
        params: dict[str, Any] = {"temperature": float(temperature), "max_tokens": int(max_tokens)}
        if seed is not None:
            params["seed"] = int(seed)
        if logprobs:
            params.update(logprobs=True, top_logprobs=int(logprobs))
        msgs = tuple({"role": str(m["role"]), "content": str(m["content"])} for m in messages)
        return cls(msgs, schema, params, prompt_id)

    def send_params(self, structured_output: bool) -> dict[str, Any]:
        """The parameters to send; with ``structured_output``, the schema as ``response_format``.

        Servers that support ``response_format`` turn it into a grammar.
        """
        if self.schema is None or not structured_output:
            return self.params
        return {
            **self.params,
            "response_format": response_format(self.schema, self.prompt_id or "answer"),
        }

    def repair(self, answer: str, error: JudgeParseError) -> list[dict[str, str]]:
        """The conversation of a repair round: the judge sees its answer and what was wrong."""
        return [
            *self.messages,
            {"role": "assistant", "content": answer[:REPAIR_ANSWER_CHARS]},
            {
                "role": "user",
                "content": f"That answer was not valid: {error}. "
                "Reply again with only the JSON object.",
            },
        ]

    def parse(self, text: str) -> Any:
        """The JSON value in ``text``, validated against the schema.

        Raises:
            JudgeParseError: No JSON in the text, or JSON that does not match the schema.
        """
        return parse_reply(text, self.schema)


@dataclass(frozen=True)
class TokenLogprob:
    """One output token, its log-probability and the top alternatives the server returned."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class JudgeReply:
    """A parsed judge answer and what it cost."""

    data: Any
    text: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    seconds: float
    cached: bool
    logprobs: tuple[TokenLogprob, ...] | None = None
    prompt_id: str = ""


@dataclass(frozen=True)
class RawAnswer:
    """One answer as the server sent it: text not yet parsed, tokens, log-probabilities."""

    text: str
    input_tokens: int
    output_tokens: int
    logprobs: tuple[TokenLogprob, ...] | None

    @classmethod
    def from_response(cls, response: Any) -> RawAnswer:
        """Read a litellm ``ModelResponse``.

        Raises:
            JudgeParseError: The response holds no message.
        """
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
        except (AttributeError, IndexError, TypeError) as exc:
            raise JudgeParseError(f"the judge's response has no message: {exc}") from exc
        use = getattr(response, "usage", None)
        return cls(
            str(text),
            int(getattr(use, "prompt_tokens", 0) or 0),
            int(getattr(use, "completion_tokens", 0) or 0),
            _logprobs_from_choice(choice),
        )


def _logprobs_from_choice(choice: Any) -> tuple[TokenLogprob, ...] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if content is None and isinstance(getattr(choice, "logprobs", None), Mapping):
        content = choice.logprobs.get("content")
    if not content:
        return None
    out = []
    for item in content:
        top = tuple(
            (str(_field(t, "token")), float(_field(t, "logprob")))
            for t in (_field(item, "top_logprobs") or ())
        )
        out.append(TokenLogprob(str(_field(item, "token")), float(_field(item, "logprob")), top))
    return tuple(out)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def logprobs_to_json(logprobs: tuple[TokenLogprob, ...] | None) -> Any:
    """Log-probabilities as JSON lists ``[token, logprob, [[alternative, logprob], ...]]``."""
    if logprobs is None:
        return None
    return [[t.token, t.logprob, [list(a) for a in t.top]] for t in logprobs]


def logprobs_from_json(data: Any) -> tuple[TokenLogprob, ...] | None:
    """The inverse of ``logprobs_to_json`` (None for no log-probabilities)."""
    if not data:
        return None
    return tuple(
        TokenLogprob(str(tok), float(lp), tuple((str(a), float(b)) for a, b in top))
        for tok, lp, top in data
    )
