"""One redaction policy for every text ragtrace writes, sends or stores (``policy``).

Built from ``Config.redact`` by the processes that handle records (an application's runtime,
``ragtrace worker``, ``ragtrace ingest``, ``ragtrace eval``) and handed to capture, the pipeline
and the sinks (docs/data-safety.md)::

    from ragtrace.redaction import redaction

    policy = redaction("pii")
    policy.text("mail alice@corp.example")      # 'mail <EMAIL_ADDRESS>'
"""

from ragtrace.capture.content import REDACTION_FAILED
from ragtrace.capture.records import unmarked
from ragtrace.config.kinds import REDACTION_POLICIES
from ragtrace.redaction.policy import NO_REDACTION, Redaction, redaction

__all__ = [
    "NO_REDACTION",
    "REDACTION_FAILED",
    "REDACTION_POLICIES",
    "Redaction",
    "redaction",
    "unmarked",
]
