"""Systems given as Python objects: ``ragtrace eval --system-callable [NAME=]module:attr``.

``load_system("my_app.rag:chain")`` imports ``my_app.rag``, takes ``chain`` (a dotted path
inside the module also works) and wraps it as a ``System`` whose ``ask(query)`` returns an
``Answer`` (``ragtrace._offline.answers``). What the object may be:

- an app of a framework ragtrace integrates (``ragtrace.integrations._adapters``: the first
  adapter that matches calls it, a ``FrameworkSystem``): a LangChain runnable (it has
  ``invoke``: a chain, a ``langchain.agents.create_agent`` agent, a compiled LangGraph graph),
  invoked with the input its schema asks for and ragtrace's own LangChain capture, which sees
  the retrieved documents, the tool calls and the model's name whatever the runnable returns
  (``ragtrace.integrations.langchain._adapter``); a LlamaIndex query engine (it has ``query``):
  ``query(query)``, the contexts being the returned ``Response``'s ``source_nodes``
  (``ragtrace.integrations.llama_index._adapter``);
- a function of the query: what it returns is read by ``answer_from``; a function with a
  parameter named ``history`` or ``chat_history`` besides the query is also given a case's
  earlier turns there (``[{"role": ..., "content": ...}, ...]``, empty for a single-turn case);
- a class, or a function that takes no argument: a factory, called once to build one of the
  above (``ragtrace.demo.systems:demo_chain``).

``ask(query, conversation)`` asks the question of a multi-turn case after its earlier turns
(``RagRecord.conversation``; ``ragtrace._offline.case_conversations``): see each system.

The system's name is ``NAME`` when given, else the attribute's last part (``chain``). Every
problem in finding or building the object raises ``SystemSpecError`` (a usage error, exit 2).
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ragtrace import _semconv as sc
from ragtrace._config.suggestions import suggest
from ragtrace._model import Conversation, chat_messages
from ragtrace._offline.answers import Answer, answer_from, usage_from
from ragtrace.integrations._adapters import AppCaller, adapter_for, adapters

_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_PARAMS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_BY_NAME = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
HISTORY_PARAMETERS = ("history", "chat_history")


class SystemSpecError(ValueError):
    """A ``--system-callable`` that cannot be used; the message says why."""


class System(Protocol):
    """A system ``ragtrace eval`` asks questions of."""

    name: str

    def ask(self, query: str, conversation: Conversation | None = None) -> Answer:
        """The system's answer to ``query``, asked after the earlier turns of
        ``conversation`` when given (it may raise: the caller records the failure)."""
        ...

    def close(self) -> None:
        """Release what the system holds."""
        ...


@dataclass(frozen=True, slots=True)
class CallableSpec:
    """A parsed ``[NAME=]module:attr``."""

    name: str
    module: str
    attr: str
    text: str


def parse_spec(text: str) -> CallableSpec:
    """``[NAME=]module:attr`` split into its parts.

    Raises:
        SystemSpecError: Not of that form.
    """
    name, equals, target = text.partition("=")
    if not equals:
        name, target = "", text
    module, colon, attr = target.strip().partition(":")
    if not colon or not _DOTTED.match(module) or not _DOTTED.match(attr):
        raise SystemSpecError(
            f"--system-callable {text!r}: expected [NAME=]module:attr, "
            "e.g. ragtrace.demo.systems:demo_chain"
        )
    if equals and not name.strip():
        raise SystemSpecError(f"--system-callable {text!r}: the NAME before '=' is empty")
    return CallableSpec(name.strip() or attr.rsplit(".", 1)[-1], module, attr, text)


def load_system(text: str) -> System:
    """The system ``text`` (``[NAME=]module:attr``) names, built and wrapped.

    Raises:
        SystemSpecError: Bad form, a module that does not import, a missing attribute, a
            factory that fails, or an object that is none of the supported kinds.
    """
    spec = parse_spec(text)
    try:
        module = importlib.import_module(spec.module)
    except Exception as exc:
        raise SystemSpecError(
            f"--system-callable {text}: cannot import {spec.module!r}: {type(exc).__name__}: {exc}"
        ) from None
    target: Any = module
    for part in spec.attr.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_")]
            raise SystemSpecError(
                f"--system-callable {text}: no attribute {part!r}{suggest(part, names)}"
            )
        target = getattr(target, part)
    return make_system(spec.name, target, f"--system-callable {text}")


def make_system(name: str, target: object, where: str = "system") -> System:
    """``target`` (see the module docstring) as a ``System`` called ``name``.

    Raises:
        SystemSpecError: A factory that fails, or an unsupported object.
    """
    if is_factory(target):
        try:
            target = target()  # type: ignore[operator]
        except Exception as exc:
            raise SystemSpecError(
                f"{where}: the factory raised {type(exc).__name__}: {exc}"
            ) from None
    adapter = adapter_for(target)
    if adapter is not None:
        return FrameworkSystem(name, adapter.caller(name, target))
    if callable(target) and not isinstance(target, type):
        return FunctionSystem(name, target)
    kinds = "".join(f"{adapter.app_kind}, " for adapter in adapters())
    raise SystemSpecError(
        f"{where}: {type(target).__name__} is not {kinds}a function of the query, "
        "or a factory of one of these"
    )


def is_factory(target: object) -> bool:
    """A class, or a callable that is not itself a system and takes no argument."""
    if isinstance(target, type):
        return True
    if not callable(target) or adapter_for(target) is not None:
        return False
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(
        p.kind == inspect.Parameter.VAR_POSITIONAL or (p.kind in _PARAMS and p.default is p.empty)
        for p in parameters
    )


class FrameworkSystem:
    """An app of a framework, called by its adapter's ``AppCaller``: the answer is the record
    ragtrace's capture saw of the turn when the caller captured one (its response, else the
    return value's; its chunks, model, tokens, tool calls, LLM calls and conversation), else
    what the app returned, read by ``answer_from``."""

    def __init__(self, name: str, caller: AppCaller) -> None:
        self.name = name
        self.caller = caller

    def ask(self, query: str, conversation: Conversation | None = None) -> Answer:
        called = self.caller.call(query, conversation)
        record = called.record
        if record is None:
            return answer_from(called.result)
        response = record.response
        if response is None:
            response = answer_from(called.result).response
        usage = usage_from(
            {
                "input_tokens": record.attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS),
                "output_tokens": record.attributes.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
            }
        )
        return Answer(
            response,
            record.chunks,
            record.model,
            usage,
            tool_calls=record.tool_calls,
            llm_calls=record.llm_calls,
            conversation=merged(record.conversation, conversation),
        )

    def close(self) -> None:
        self.caller.close()


def merged(captured: Conversation | None, case: Conversation | None) -> Conversation | None:
    """The conversation of an answer: what the capture saw, with the case's earlier turns
    when the capture saw none (an app that was not given them)."""
    if captured is None:
        return case
    if case is None:
        return captured
    session_id = captured.session_id or case.session_id
    if captured.history or not case.history:
        return replace(captured, session_id=session_id)
    return replace(captured, session_id=session_id, history=case.history, turn=case.turn)


class FunctionSystem:
    """A function of the query; what it returns is read by ``answer_from``. A parameter named
    ``history`` or ``chat_history`` (not the first) gets the earlier turns of the case."""

    def __init__(self, name: str, function: Any) -> None:
        self.name = name
        self.function = function
        self.history_parameter = history_parameter(function)

    def ask(self, query: str, conversation: Conversation | None = None) -> Answer:
        if self.history_parameter is None:
            return answer_from(self.function(query))
        turns = conversation.history if conversation is not None else ()
        return answer_from(self.function(query, **{self.history_parameter: chat_messages(turns)}))

    def close(self) -> None:
        return None


def history_parameter(function: Any) -> str | None:
    """The name of ``function``'s parameter for earlier turns (``HISTORY_PARAMETERS``, not its
    first parameter, passable by name), or None."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    return next(
        (p.name for p in parameters[1:] if p.name in HISTORY_PARAMETERS and p.kind in _BY_NAME),
        None,
    )
