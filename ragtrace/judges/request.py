"""What goes to a judge: the messages, the schema its answer must match, the sampling parameters.

``JudgeRequest.build`` normalises the caller's chat messages and per-call settings. The request
then gives the parameters sent to litellm (with the schema as ``response_format``), the
conversation of a repair round after an unparseable answer, and the validated JSON of an answer
(``ragtrace.judges.structured``)::

    request = JudgeRequest.build(messages, schema=SCHEMA, prompt_id="p@v1", temperature=0.0,
                                 max_tokens=512)
    data = request.parse(answer_text)  # raises JudgeParseError
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.judges.errors import JudgeParseError
from ragtrace.judges.structured import parse_reply, response_format

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
