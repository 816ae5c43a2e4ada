"""Which judge a client talks to: a litellm model with its server and key, or the local judge.

With no model given, ``JudgeEndpoint.from_settings`` takes ``RAGTRACE_JUDGE_MODEL`` (and
``RAGTRACE_JUDGE_API_BASE``, ``RAGTRACE_JUDGE_API_KEY``); with none set either, the endpoint is
the embedded local llama.cpp judge (``ragtrace.judges.local``), started on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ragtrace.judges.errors import JudgeUnavailable

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def is_loopback(api_base: str | None) -> bool:
    """Whether ``api_base`` is a server on this machine (an unparseable URL is not)."""
    if not api_base:
        return False
    try:
        host = urlsplit(api_base).hostname
    except ValueError:
        return False
    return host in LOOPBACK_HOSTS


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where a judge is reached.

    Attributes:
        model: A litellm model string; None for the embedded local judge.
        api_base: The server's URL (None: litellm's default for the model).
        api_key: The key sent to the server (None: litellm's own environment variables).
    """

    model: str | None
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(
        cls, model: str | None, api_base: str | None, api_key: str | None
    ) -> JudgeEndpoint:
        """The given settings, each falling back to its ``RAGTRACE_JUDGE_*`` variable."""
        return cls(
            model or os.environ.get("RAGTRACE_JUDGE_MODEL") or None,
            api_base or os.environ.get("RAGTRACE_JUDGE_API_BASE") or None,
            api_key or os.environ.get("RAGTRACE_JUDGE_API_KEY") or None,
        )

    @property
    def is_local(self) -> bool:
        """Whether this is the embedded local judge."""
        return self.model is None

    @property
    def on_this_machine(self) -> bool:
        """Whether the judge listens on loopback: the embedded judge, ``ragtrace judge serve``
        or a server the user runs here (llama.cpp, vLLM, Ollama)."""
        return self.is_local or is_loopback(self.api_base)

    @property
    def model_name(self) -> str:
        """The litellm model string (for the local judge: ``openai/<alias>``)."""
        if self.model is None:
            from ragtrace.judges.local import local_model_name

            return local_model_name()
        return self.model

    def litellm_target(self) -> dict[str, Any]:
        """The litellm arguments that reach this judge: ``model``, ``api_base``, ``api_key``.

        ``api_base`` and ``api_key`` only when needed; the local judge is started on first use.

        Raises:
            JudgeUnavailable: The local judge could not start.
        """
        model, api_base = self._resolve()
        target: dict[str, Any] = {"model": model}
        if api_base:
            target["api_base"] = api_base
        if self.api_key:
            target["api_key"] = self.api_key
        elif self.is_local or (
            api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY")
        ):
            target["api_key"] = "none"  # an OpenAI-compatible server that wants no key
        return target

    def _resolve(self) -> tuple[str, str | None]:
        if self.model is None:
            from ragtrace.judges.local import default_endpoint

            try:
                return default_endpoint()
            except Exception as exc:  # a missing extra, a model that fails its hash check...
                raise JudgeUnavailable(f"the local judge could not start: {exc}") from exc
        return self.model, self.api_base
