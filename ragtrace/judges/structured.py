"""Turning a judge's answer text into validated JSON.

Servers that honour ``response_format`` return bare JSON; others wrap it in a Markdown fence or
add a sentence around it. ``parse_reply`` takes the first JSON value in the text (after removing
a fence), then validates it strictly against the JSON schema. Anything else is a
``JudgeParseError``: a parse failure is its own outcome, never a guessed score.

Length and count limits (``maxItems``, ``maxLength``...) bound what a grammar lets a small model
write: a 0.5B judge that starts repeating one list item stops at ``maxItems`` instead of running
into its token limit with unclosed JSON. Hosted providers' strict modes reject or ignore such
keywords, so ``without_limits`` removes them for judges that are not on this machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ragtrace.judges.errors import JudgeParseError

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
