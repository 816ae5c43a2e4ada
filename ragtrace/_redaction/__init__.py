"""One redaction policy for every text ragtrace writes, sends or stores (``policy``).

Built from ``Config.redact`` by the processes that handle records (an application's runtime,
``ragtrace worker``, ``ragtrace ingest``, ``ragtrace eval``) and handed to capture, the pipeline
and the sinks (docs/data-safety.md)::

    from ragtrace._redaction import redaction

    policy = redaction("pii")
    policy.text("mail alice@corp.example")      # 'mail <EMAIL_ADDRESS>'

It sits below capture: capture hands every text to it, never the reverse. The regex detectors
it masks with live here too, and the leakage evaluators (``ragtrace.evaluators._leakage``)
score with the same ones: ``pii_patterns.find_pii`` (e-mail addresses, phone numbers, cards,
SSNs, IBANs, IP addresses), ``secret_patterns.find_secrets`` (keys, tokens, JWTs, passwords,
PEM blocks, credentials in URLs), ``surroundings`` (how both read a value's neighbourhood) and
``findings`` (``Finding`` and overlaps). The package imports only ``policy``; the detectors are
loaded on first use.
"""

from ragtrace._config.kinds import REDACTION_POLICIES
from ragtrace._redaction.policy import (
    NO_REDACTION,
    REDACTION_FAILED,
    Redaction,
    redaction,
    unmarked,
)

__all__ = [
    "NO_REDACTION",
    "REDACTION_FAILED",
    "REDACTION_POLICIES",
    "Redaction",
    "redaction",
    "unmarked",
]
