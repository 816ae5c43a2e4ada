"""The base of every LLM-judge evaluator: prompts, the judge client, failures as outcomes.

A judge evaluator implements ``judge_record(record) -> list[Score]`` and asks the judge through
``self.ask(prompt_name, schema, **texts)``: the packaged, versioned prompt template is rendered
with every captured text fenced as data (see ``ragtrace._judges.prompts``), sent through the
shared ``JudgeClient`` and validated against ``schema``. A judge failure (timeout, HTTP 429/5xx,
unreachable server, unparseable answer) becomes an error Score whose label is the outcome, so
the pipeline counts it and moves on; it never raises out of ``evaluate``.

``judge`` may be a ``JudgeClient``, a litellm model string (``"gpt-4o-mini"``), a mapping of
``JudgeClient`` arguments (what a settings file gives: ``{model: ..., api_base: ...,
timeout_s: ...}``), or None: the process-wide default client (``RAGTRACE_JUDGE_MODEL``, else
the embedded local llama.cpp judge).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, TypeVar

from ragtrace._judges.client import JudgeClient, JudgeReply
from ragtrace._judges.prompts import PromptTemplate, load_prompt
from ragtrace._judges.usage import JudgeError
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import Evaluator, InputError

T = TypeVar("T")
R = TypeVar("R")


class JudgeEvaluator(Evaluator):
    """An evaluator whose verdicts come from an LLM judge.

    A judge failure yields one error Score per name of ``score_names``, as does an
    ``InputError`` raised by ``judge_record`` (a record without usable text).

    Class attributes, besides Evaluator's:
        reports_spend: The judge client reports real spend per call, so the sampler charges
            that instead of ``cost_usd`` (which is then only the admission estimate).
    """

    kind = "judge"
    timeout_s = 180.0
    reports_spend: ClassVar[bool] = True

    def __init__(
        self, *, judge: JudgeClient | str | Mapping[str, Any] | None = None, **options: Any
    ) -> None:
        super().__init__(**options)
        self._judge = client_for(judge, self.name)

    @property
    def judge(self) -> JudgeClient:
        """The client this evaluator asks (the shared default one unless given)."""
        return self._judge if self._judge is not None else default_judge()

    def judge_record(self, record: RagRecord) -> list[Score]:
        """Score one record by asking the judge. Subclasses implement this."""
        raise NotImplementedError

    def evaluate(self, record: RagRecord) -> list[Score]:
        try:
            return self.judge_record(record)
        except JudgeError as exc:
            message = f"{exc.outcome}: {exc}"
            return [self.failure_score(exc.outcome, message, n) for n in self._names()]
        except InputError as exc:
            return self.errors(str(exc))

    def failure_score(self, outcome: str, message: str, name: str | None = None) -> Score:
        """The error Score for a judge failure; its label is the outcome."""
        score = self.error_score(message[:500], name=name)
        return Score(
            name=score.name,
            value=None,
            label=outcome,
            direction=score.direction,
            threshold=score.threshold,
            error=score.error,
            evaluator_kind=self.kind,
            model=self._model_label(),
        )

    def ask(
        self,
        prompt: str | PromptTemplate,
        schema: Mapping[str, Any] | None,
        *,
        temperature: float | None = None,
        seed: int | None = None,
        logprobs: int | None = None,
        max_tokens: int | None = None,
        **texts: object,
    ) -> JudgeReply:
        """Render ``prompt`` (a packaged prompt's name, or a template) with ``texts`` (fenced as
        data) and ask the judge."""
        template = prompt if isinstance(prompt, PromptTemplate) else load_prompt(prompt)
        return self.judge.complete(
            template.render(**texts),
            schema=schema,
            evaluator=self.name,
            prompt_id=template.id,
            temperature=temperature,
            seed=seed,
            logprobs=logprobs,
            max_tokens=max_tokens,
        )

    def map_calls(
        self, fn: Callable[[T], R], items: Sequence[T], limit: int | None = None
    ) -> list[R]:
        """``fn`` over ``items`` (judge calls of one record), results in order.

        At most ``limit`` (default: the judge client's ``concurrency``) run at once. The first
        error raises once the calls already running have finished; the rest are cancelled.
        """
        workers = min(len(items), max(1, limit or self.judge.concurrency))
        if workers <= 1:
            return [fn(item) for item in items]
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=self.name)
        try:
            return list(pool.map(fn, items))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    def contexts_text(record: RagRecord) -> str:
        """The retrieved chunks, numbered in rank order: ``[1] ...\\n[2] ...``."""
        return "\n".join(f"[{i}] {chunk.text}" for i, chunk in enumerate(record.chunks, 1))

    def score(
        self,
        value: float | None,
        *,
        model: str | None = None,
        details: Mapping[str, Any] | None = None,
        replies: Sequence[JudgeReply] = (),
        **options: Any,
    ) -> Score:
        """``Evaluator.score``, with the judge model and (given ``replies``) call details."""
        merged = dict(details or {})
        if replies:
            merged.setdefault("prompts", sorted({r.prompt_id for r in replies if r.prompt_id}))
            merged.setdefault("judge_calls", len(replies))
            merged.setdefault("cached_calls", sum(1 for r in replies if r.cached))
        return super().score(value, model=model or self._model_label(), details=merged, **options)

    def _model_label(self) -> str | None:
        try:
            return self.judge.model_name
        except Exception:
            return None


def object_schema(**properties: Any) -> dict[str, Any]:
    """The strict JSON schema of an object of exactly ``properties``, all of them required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_clients: dict[str, JudgeClient] = {}
_clients_lock = threading.Lock()


def client_for(
    judge: JudgeClient | str | Mapping[str, Any] | None, evaluator: str = "judge"
) -> JudgeClient | None:
    """The client for a ``judge`` option: a client as is; a litellm model string or a mapping
    of ``JudgeClient`` arguments (``{model: ..., api_base: ..., timeout_s: ...}``, as in a
    settings file) gives one client per distinct setting, shared by the evaluators that name
    it; None means the default judge (resolved on first use)."""
    if judge is None or isinstance(judge, JudgeClient):
        return judge
    if isinstance(judge, str):
        judge = {"model": judge}
    if not isinstance(judge, Mapping):
        raise TypeError(
            f"evaluator {evaluator!r}: judge must be a JudgeClient, a litellm model string, "
            f"a mapping of JudgeClient options or None, got {type(judge).__name__}"
        )
    key = json.dumps(dict(judge), sort_keys=True, default=str)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            options = dict(judge)
            model = options.pop("model", None)
            try:
                client = JudgeClient(model, **options)
            except TypeError as exc:
                raise TypeError(f"evaluator {evaluator!r}: bad judge option: {exc}") from None
            _clients[key] = client
    return client


_default_client: JudgeClient | None = None
_default_lock = threading.Lock()


def default_judge() -> JudgeClient:
    """The process-wide judge client for evaluators made without one."""
    global _default_client
    with _default_lock:
        if _default_client is None:
            _default_client = JudgeClient()
        return _default_client


def set_default_judge(client: JudgeClient | None) -> None:
    """Make ``client`` the judge of evaluators made without one (None: back to the default)."""
    global _default_client
    with _default_lock:
        _default_client = client
