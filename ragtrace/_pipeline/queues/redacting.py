"""What a worker keeps of a work item it reads, and of a dead letter, under a redaction policy.

A record read from the stream is redacted as it is decoded, unless it already went through
that policy in the application (its ``ragtrace._redaction`` says so); the record as read stays
beside it in memory (``WorkItem.raw``) for the raw-text evaluators. A dead letter keeps a
decodable payload re-encoded from its redacted record, any other payload redacted as text, or,
past ``MAX_REDACTED_PAYLOAD_BYTES``, a note of its size::

    item = read_item(payload, entry_id, max_entry_bytes, policy)
    kept = redacted_payload(payload, policy, max_entry_bytes)
"""

from __future__ import annotations

from dataclasses import replace

from ragtrace._pipeline.queues.base import WorkItem
from ragtrace._pipeline.queues.codec import CodecError, decode_item, encode_item
from ragtrace._redaction import Redaction, unmarked

MAX_REDACTED_PAYLOAD_BYTES = 1 << 20
"""Largest undecodable payload a dead letter keeps (redacted as text) under a redaction policy."""


def read_item(payload: bytes, entry_id: str, max_entry_bytes: int, policy: Redaction) -> WorkItem:
    """The work item of stream entry ``entry_id`` as a worker keeps it: its receipt and (when
    the shipper gave none) its key are the entry's id; redacted (``redacted_item``).

    Raises:
        CodecError: ``payload`` is not a work item (it goes to the dead letters).
    """
    item = replace(decode_item(payload, max_entry_bytes), receipt=entry_id)
    if item.key is None:
        item = replace(item, key=entry_id)
    return redacted_item(item, policy)


def redacted_item(item: WorkItem, policy: Redaction) -> WorkItem:
    """``item`` with its record (and the evaluations made before it left) redacted; the record
    as read kept beside it in memory."""
    record = policy.record(item.record)
    if record is item.record:
        return item
    done = tuple(policy.evaluations(item.done))
    return replace(item, record=record, done=done, raw=unmarked(item.record))


def redacted_payload(payload: bytes, policy: Redaction, max_entry_bytes: int) -> bytes:
    """What a dead letter keeps of ``payload`` under ``policy``."""
    if not policy.active:
        return payload
    try:
        return encode_item(redacted_item(decode_item(payload, max_entry_bytes), policy))
    except (CodecError, ValueError):
        pass
    if len(payload) > MAX_REDACTED_PAYLOAD_BYTES:
        return f"<undecodable payload of {len(payload)} bytes, not kept: redaction is on>".encode()
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    return policy.text(text).encode("utf-8", "replace")
