"""One redaction policy for every text ragtrace writes, sends or stores.

A ``Redaction`` rewrites text before it leaves the process: span attributes and events, the
``RagRecord`` handed to the pipeline, Redis payloads and dead letters, review items, evaluation
results (log events, Phoenix annotations, the scores file of ``ragtrace eval``), logs. It is
built once from ``Config.redact`` (``redaction(config.redact)``) and applied at the record
boundary: capture redacts each text as it takes it, ``ragtrace ingest`` and ``ragtrace worker``
redact each record as it arrives, and scores are redacted before any sink publishes them
(docs/data-safety.md, docs/decisions/redaction-at-the-record-boundary.md)::

    policy = redaction("pii")
    policy.text("mail alice@corp.example")      # 'mail <EMAIL_ADDRESS>'
    policy.record(record)                        # every text, metadata at any depth, marked
    policy.evaluations(evaluations)              # explanations, labels, errors, details

Built-in policies (``REDACTION_POLICIES``), all reusing the detectors of ragtrace's own leakage
evaluators, each finding replaced by ``<TYPE>``:

- ``none``: nothing changes.
- ``secrets``: what ``sensitive_data`` finds: API keys and tokens, passwords, private keys,
  certificates, credentials in URLs
  (``ragtrace._redaction.secret_patterns.find_secrets``).
- ``pii``: the secrets, and the structured PII ``pii_leakage`` finds: e-mail addresses, card
  numbers, SSNs, IBANs, IP addresses, phone numbers
  (``ragtrace._redaction.pii_patterns.find_pii``).
  Names and places are not redacted (that needs NER: give a function).

Identities keep their identity: where a text names something (a chunk id, a user id, the
``id``, ``session.id``, ``user.id`` and ``gen_ai.conversation.id`` attributes; ``identity``), a
built-in policy's placeholder carries a keyed hash of what it replaced, ``<EMAIL_ADDRESS:1f3a9c2e>``
(the first 8 hex digits of HMAC-SHA256(key, finding)): two ids holding different e-mail
addresses stay different, equal ones stay equal, and the address cannot be read back without the
key. The key is ``RAGTRACE_REDACTION_KEY`` (read when the policy is built), else a random key per
process: ids then compare only within one process (a pickled policy carries its key, so the
worker processes of one ``ragtrace eval`` run agree). Free text (query, response, chunk text,
metadata) keeps the plain ``<TYPE>``.

Or a function ``str -> str``: applied to every text as given, identities included; if it
raises or returns something other than a string, the text becomes ``<redaction failed>``
(never the text itself). A function must be idempotent (applying it twice gives what applying
it once gave): a record redacted by an application may be redacted again by a worker with its
own policy. The built-in policies are (the detectors never read inside a placeholder).

A redacted record carries the names of the policies applied in ``ragtrace._redaction``; a record
that already carries this policy's name is not redacted again. Found values are kept in memory
only: a bounded cache of recent texts (a retrieved chunk comes back in many requests) saves
scanning them twice.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragtrace._config.kinds import REDACTION_POLICIES
from ragtrace._model import Chunk, Conversation, RagRecord, Score, ToolCall, Turn
from ragtrace._semconv import (
    GEN_AI_CONVERSATION_ID,
    RAGTRACE_REDACTION,
    SESSION_ID,
    USER_ID,
)

if TYPE_CHECKING:
    from ragtrace._model import Evaluation


REDACTION_FAILED = "<redaction failed>"
"""What a text becomes when a redaction function raises or returns something else than text."""
CUSTOM = "custom"
"""The name a function's policy goes by in ``ragtrace._redaction``."""
CACHED_TEXTS = 1024
"""Most recent texts whose redaction is kept (each at most ``CACHED_CHARS`` long)."""
CACHED_CHARS = 8192
MAX_DEPTH = 64
"""Deepest nesting of a value redacted (metadata, details); deeper parts become a marker."""
TOO_DEEP = "<too deep>"
KEY_VARIABLE = "RAGTRACE_REDACTION_KEY"
"""The environment variable holding the key of identity placeholders' hashes."""
SUFFIX_HEX = 8
"""Hex digits of HMAC-SHA256 an identity placeholder carries."""
IDENTITY_ATTRIBUTES = frozenset({"id", SESSION_ID, USER_ID, GEN_AI_CONVERSATION_ID})
"""Record attributes whose (string) values are identities."""
_PROCESS_KEY = secrets.token_bytes(32)
_HASHED = re.compile(rf"<[A-Z][A-Z0-9_]*:[0-9a-f]{{{SUFFIX_HEX}}}>")
"""An identity placeholder (never redacted again: the built-in policies stay idempotent)."""


def _key(key: bytes | str | None) -> bytes:
    """The hash key: ``key``, else ``RAGTRACE_REDACTION_KEY``, else the process's random key."""
    if key is None:
        key = os.environ.get(KEY_VARIABLE) or None
    if key is None:
        return _PROCESS_KEY
    return key.encode("utf-8") if isinstance(key, str) else bytes(key)


class Redaction:
    """A redaction policy: built-in (``none``, ``secrets``, ``pii``) or a function.

    Public as ``ragtrace.Redaction``. A running ragtrace's is ``rt.redaction`` (built from
    ``Config.redact``); the review sink and app take one as ``redact=`` to share it. Apply it
    with ``text`` (free text), ``identity`` (ids: a built-in policy keeps distinct ids
    distinct), ``record`` (every text of a ``RagRecord``) or ``evaluations``.

    Args:
        spec: A policy name, a ``str -> str`` function, or None (``none``).
        key: The key of identity placeholders' hashes; default: ``RAGTRACE_REDACTION_KEY``,
            else a random key per process.

    Raises:
        ValueError: An unknown policy name or something that is neither a name nor a function.
    """

    __slots__ = ("_cached", "_cached_identity", "_function", "_key", "_spec", "active", "name")

    def __init__(
        self, spec: str | Callable[[str], str] | None = None, key: bytes | str | None = None
    ) -> None:
        self._spec = spec
        self._key = _key(key)
        self._function: Callable[[str], str] | None = None
        if spec is None or spec == "none":
            self.name, self.active = "none", False
        elif isinstance(spec, str):
            if spec not in REDACTION_POLICIES:
                raise ValueError(
                    f"unknown redaction policy {spec!r}: one of {', '.join(REDACTION_POLICIES)}, "
                    "or a function str -> str"
                )
            self.name, self.active = spec, True
        elif callable(spec):
            self.name, self.active = CUSTOM, True
            self._function = spec
        else:
            raise ValueError(f"redaction: expected a policy name or a function, got {spec!r}")
        self._cached: Callable[[str], str] = functools.lru_cache(maxsize=CACHED_TEXTS)(self._scan)
        self._cached_identity: Callable[[str], str] = functools.lru_cache(maxsize=CACHED_TEXTS)(
            self._scan_identity
        )

    def __repr__(self) -> str:
        return f"Redaction({self.name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its spec and key (the cache stays behind): worker processes rebuild it,
        and hash identities as this process does."""
        return (Redaction, (self._spec, self._key))

    # -- texts --------------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """``text`` redacted (never raises: a failing function gives ``<redaction failed>``)."""
        if not self.active or not text:
            return text
        if len(text) <= CACHED_CHARS:
            return self._cached(text)
        return self._scan(text)

    def optional(self, text: str | None) -> str | None:
        """``text`` redacted, None kept."""
        return None if text is None else self.text(text)

    def identity(self, text: str) -> str:
        """``text`` redacted as an identity (an id, a name that tells records apart): with a
        built-in policy each placeholder carries a keyed hash of what it replaced
        (``<EMAIL_ADDRESS:1f3a9c2e>``), so distinct ids stay distinct; a function's policy
        applies the function as ``text`` does."""
        if not self.active or not text:
            return text
        if self._function is not None:
            return self.text(text)
        if len(text) <= CACHED_CHARS:
            return self._cached_identity(text)
        return self._scan_identity(text)

    def optional_identity(self, text: str | None) -> str | None:
        """``text`` redacted as an identity, None kept."""
        return None if text is None else self.identity(text)

    def _scan_identity(self, text: str) -> str:
        return _mask(text, self.name, self._key)

    def _scan(self, text: str) -> str:
        if self._function is not None:
            try:
                out = self._function(text)
            except Exception:
                return REDACTION_FAILED
            return out if isinstance(out, str) else REDACTION_FAILED
        return _mask(text, self.name)

    # -- values -------------------------------------------------------------------------------

    def value(self, value: Any, depth: int = 0) -> Any:
        """A copy of ``value`` with every string in it redacted, mapping keys included, at any
        depth (mappings become dicts, tuples stay tuples); other values are kept."""
        if not self.active:
            return value
        if isinstance(value, str):
            return self.text(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        if isinstance(value, Mapping):
            return {
                self.text(k) if isinstance(k, str) else k: self.value(v, depth + 1)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.value(v, depth + 1) for v in value]
        if isinstance(value, tuple):
            return tuple(self.value(v, depth + 1) for v in value)
        if isinstance(value, bytes | bytearray):
            return self.text(bytes(value).decode("utf-8", "replace"))
        return value

    # -- records ------------------------------------------------------------------------------

    def applied_to(self, record: RagRecord) -> bool:
        """Whether ``record`` already went through this policy (its ``ragtrace._redaction``
        names it)."""
        marks = record.attributes.get(RAGTRACE_REDACTION)
        return isinstance(marks, str) and self.name in marks.split(",")

    def mark(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """``attributes`` with this policy added to ``ragtrace._redaction``."""
        marks = attributes.get(RAGTRACE_REDACTION)
        names = marks.split(",") if isinstance(marks, str) and marks else []
        if self.name not in names:
            names.append(self.name)
        return {**attributes, RAGTRACE_REDACTION: ",".join(names)}

    def record(self, record: RagRecord) -> RagRecord:
        """``record`` with every text redacted: query, response, reference, error, app,
        model, each chunk's text, id, source and metadata (keys and values, at any depth) and
        the attributes; marked with this policy. A record already marked is returned as is."""
        if not self.active or self.applied_to(record):
            return record
        attributes = {k: self._attribute(k, v) for k, v in record.attributes.items()}
        return dataclasses.replace(
            record,
            query=self.optional(record.query),
            chunks=tuple(self.chunk(c) for c in record.chunks),
            response=self.optional(record.response),
            reference=self.optional(record.reference),
            app=self.text(record.app),
            model=self.optional(record.model),
            error=self.optional(record.error),
            attributes=self.mark(attributes),
            conversation=self.conversation(record.conversation),
            tool_calls=tuple(self.tool_call(t) for t in record.tool_calls),
        )

    def _attribute(self, key: str, value: Any) -> Any:
        """An attribute's value redacted; ``IDENTITY_ATTRIBUTES`` as identities."""
        if key in IDENTITY_ATTRIBUTES and isinstance(value, str):
            return self.identity(value)
        return self.value(value)

    def chunk(self, chunk: Chunk) -> Chunk:
        """``chunk`` with its text, id (as an identity), source, metadata and the query it
        answered redacted."""
        return dataclasses.replace(
            chunk,
            text=self.text(chunk.text),
            id=self.optional_identity(chunk.id),
            metadata=self.value(chunk.metadata) if chunk.metadata else chunk.metadata,
            source=self.optional(chunk.source),
            query=self.optional(chunk.query),
        )

    def conversation(self, conversation: Conversation | None) -> Conversation | None:
        """``conversation`` with its earlier turns, standalone question and user id (as an
        identity) redacted.

        The session id is kept as it is: it is what groups a conversation's turns (review,
        Phoenix's Sessions tab); an app whose session ids are personal data should hash them
        before handing them over (``ragtrace.session``)."""
        if conversation is None:
            return None
        return dataclasses.replace(
            conversation,
            user_id=self.optional_identity(conversation.user_id),
            history=tuple(Turn(t.role, self.text(t.content)) for t in conversation.history),
            standalone_query=self.optional(conversation.standalone_query),
        )

    def tool_call(self, call: ToolCall) -> ToolCall:
        """``call`` with its arguments and error redacted."""
        return dataclasses.replace(
            call, arguments=self.optional(call.arguments), error=self.optional(call.error)
        )

    # -- results ------------------------------------------------------------------------------

    def score(self, score: Score) -> Score:
        """``score`` with its label, explanation, error, model and details redacted."""
        if not self.active:
            return score
        return dataclasses.replace(
            score,
            label=self.optional(score.label),
            explanation=self.optional(score.explanation),
            error=self.optional(score.error),
            model=self.optional(score.model),
            details=self.value(score.details) if score.details else score.details,
        )

    def evaluations(self, evaluations: Sequence[Evaluation]) -> Sequence[Evaluation]:
        """Each evaluation with its scores redacted (``score``)."""
        if not self.active:
            return evaluations
        return tuple(
            dataclasses.replace(e, scores=tuple(self.score(s) for s in e.scores))
            for e in evaluations
        )


def redaction(spec: str | Callable[[str], str] | Redaction | None) -> Redaction:
    """The ``Redaction`` that ``spec`` names (``Config.redact``: a policy name, a function or
    None); a ``Redaction`` is returned as is."""
    return spec if isinstance(spec, Redaction) else Redaction(spec)


NO_REDACTION = Redaction()
"""The ``none`` policy."""


def _mask(text: str, policy: str, key: bytes | None = None) -> str:
    """``text`` with each finding of ``policy``'s detectors replaced by ``<TYPE>``, or with a
    ``key``, ``<TYPE:hash>`` (``SUFFIX_HEX`` hex digits of HMAC-SHA256 of the finding);
    findings that overlap are replaced together (their union), under the type of the one that
    starts first (a secret's, where a secret and PII start together)."""
    from ragtrace._redaction.secret_patterns import find_secrets  # loaded on first use

    # The detectors read identity placeholders as ``<XXX...>`` (same length, so positions hold):
    # a hash may look like a number, and ``<PASSWORD:...`` like a password's label.
    scanned = (
        _HASHED.sub(lambda m: "<" + "X" * (len(m[0]) - 2) + ">", text) if "<" in text else text
    )
    found = [(f.start, f.end, f.entity_type) for f in find_secrets(scanned)]
    if policy == "pii":
        from ragtrace._redaction.pii_patterns import find_pii

        found.extend((f.start, f.end, f.entity_type) for f in find_pii(scanned))
    if not found:
        return text
    found.sort(key=lambda f: (f[0], -f[1]))
    merged: list[list[Any]] = []
    for start, end, kind in found:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, kind])
    parts: list[str] = []
    at = 0
    for start, end, kind in merged:
        parts.append(text[at:start])
        if key is None:
            parts.append(f"<{kind}>")
        else:
            found_text = text[start:end].encode("utf-8", "surrogatepass")
            digest = hmac.new(key, found_text, hashlib.sha256).hexdigest()[:SUFFIX_HEX]
            parts.append(f"<{kind}:{digest}>")
        at = end
    parts.append(text[at:])
    return "".join(parts)


def unmarked(record: RagRecord) -> RagRecord:
    """``record`` without a redaction's mark (``ragtrace._redaction``): the twin of a redacted
    record that holds its text before redaction carries no mark (it was not redacted)."""
    if RAGTRACE_REDACTION not in record.attributes:
        return record
    attributes = {k: v for k, v in record.attributes.items() if k != RAGTRACE_REDACTION}
    return dataclasses.replace(record, attributes=attributes)
