"""Small deterministic LlamaIndex agents for tests: scripted fake LLMs and a RAG tool.

``ToolCallingLLM`` is LlamaIndex's own ``MockFunctionCallingLLM`` with a scripted reply: to a
user message it answers with one call of the tool it was given (its ``input`` is the message),
and once the tool has answered that call, with ``final_answer(<the message>)``. ``ReActLLM``
does the same in ReAct text ("Thought / Action / Action Input", then "Thought / Answer"). The
tool is a ``QueryEngineTool`` over a ``VectorStoreIndex`` of ``li_app.CORPUS`` built with
``MockEmbedding``, so the agents, their tool calls and the retrievals inside them all run for
real without a network. ``HandoffLLM`` hands every message to another agent of an
``AgentWorkflow`` (its ``handoff`` tool).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.schema import NodeWithScore
from llama_index.core.tools import FunctionTool, QueryEngineTool
from pydantic import Field

from tests.integrations.li_app import CORPUS, vector_query_engine

TOOL = "lighthouse_docs"
AGENT_MODEL = "fake-agent-model"
REACT_MODEL = "fake-react-model"
CODE_MODEL = "fake-code-model"
TOP_K = 2


def final_answer(question: str) -> str:
    """The agent's final answer to ``question`` (both fake LLMs give this one)."""
    return f"From the docs: {question}"


def _last_user(messages: Sequence[ChatMessage]) -> int:
    return max((i for i, m in enumerate(messages) if m.role == MessageRole.USER), default=-1)


class ToolCallingLLM(MockFunctionCallingLLM):
    """Calls ``tool`` once per user message with ``{"input": <the message>}``, then answers.

    With ``asks``, it makes one call per entry instead, all at once (parallel tool calls), each
    with that entry as its ``input``. Call ids number the calls (``call-1``, ``call-2``, ...).
    """

    tool: str = TOOL
    asks: list[str] | None = None
    calls: int = 0
    issued: set[str] = Field(default_factory=set)  # its own calls' ids (not another agent's)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(response_generator=self._reply, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "tool_calling_llm"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            model_name=AGENT_MODEL, is_function_calling_model=True, is_chat_model=True
        )

    def _reply(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        last = _last_user(messages)
        question = messages[last].content or "" if last >= 0 else ""
        answered = {
            m.additional_kwargs.get("tool_call_id")
            for m in messages[last + 1 :]
            if m.role == MessageRole.TOOL
        }
        if answered & self.issued:
            return ChatMessage(role="assistant", content=final_answer(question))
        blocks: list[Any] = []
        for ask in self.asks or [question]:
            self.calls += 1
            self.issued.add(f"call-{self.calls}")
            blocks.append(
                ToolCallBlock(
                    tool_call_id=f"call-{self.calls}",
                    tool_name=self.tool,
                    tool_kwargs={"input": ask},
                )
            )
        return ChatMessage(role="assistant", blocks=blocks)


class HandoffLLM(ToolCallingLLM):
    """Hands each message to agent ``to`` with ``AgentWorkflow``'s ``handoff`` tool."""

    to: str = "librarian"

    @classmethod
    def class_name(cls) -> str:
        return "handoff_llm"

    def _reply(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.calls += 1
        call = ToolCallBlock(
            tool_call_id=f"handoff-{self.calls}",
            tool_name="handoff",
            tool_kwargs={"to_agent": self.to, "reason": "it knows lighthouses"},
        )
        return ChatMessage(role="assistant", blocks=[call])


class ReActLLM(CustomLLM):
    """Answers a ReAct prompt: an action on ``tool`` first, the answer after an observation."""

    tool: str = TOOL

    @classmethod
    def class_name(cls) -> str:
        return "react_llm"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=REACT_MODEL, is_chat_model=False)

    def _text(self, prompt: str) -> str:
        # The prompt ends with the chat ("user: <question>"), then this turn's reasoning, its
        # observations given as user messages ("user: Observation: ...").
        turns = prompt.split("user: ")
        asked = max(
            (i for i, t in enumerate(turns) if i and not t.startswith("Observation:")), default=0
        )
        question = turns[asked].split("\n", 1)[0].strip()
        if any(t.startswith("Observation:") for t in turns[asked + 1 :]):
            return (
                "Thought: I can answer without using any more tools.\n"
                f"Answer: {final_answer(question)}"
            )
        arguments = json.dumps({"input": question})
        return f"Thought: I need the docs.\nAction: {self.tool}\nAction Input: {arguments}"

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._text(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = self._text(prompt)

        def gen() -> CompletionResponseGen:
            so_far = ""
            for i, word in enumerate(text.split(" ")):
                delta = word if i == 0 else " " + word
                so_far += delta
                yield CompletionResponse(text=so_far, delta=delta)

        return gen()


CODE = "print(1850 + 1)"
CODE_ANSWER = "The lighthouse was built in 1851."


class CodeActLLM(CustomLLM):
    """Answers a ``CodeActAgent``: code to run first, the answer once it sees the result."""

    @classmethod
    def class_name(cls) -> str:
        return "code_act_llm"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=CODE_MODEL, is_chat_model=False)

    def _text(self, prompt: str) -> str:
        if "Result of executing the code given" in prompt:
            return CODE_ANSWER
        return f"Let me compute it.\n<execute>\n{CODE}\n</execute>"

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._text(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = self._text(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()


def run_code(code: str) -> str:
    """``CodeActAgent``'s code runner for tests: prints what ``CODE`` would print."""
    return "1851\n" if code == CODE else ""


def docs_tool(name: str = TOOL) -> QueryEngineTool:
    """A query engine tool over the lighthouse corpus (top ``TOP_K`` chunks)."""
    return QueryEngineTool.from_defaults(
        vector_query_engine(top_k=TOP_K), name=name, description="Facts about lighthouses."
    )


def failing_tool(name: str = TOOL) -> FunctionTool:
    """A tool that always raises."""

    def lookup(input: str) -> str:  # the argument name the fake LLMs use
        """Look lighthouses up."""
        raise ConnectionError("docs service unreachable")

    return FunctionTool.from_defaults(lookup, name=name, description="Facts about lighthouses.")


SOURCE_NODES = CORPUS[1:3]
SOURCE_SCORES = [0.75, 0.5]


def sources_tool(name: str = TOOL) -> FunctionTool:
    """A tool that runs no retriever of its own but returns a ``Response`` with source nodes
    (as a search service's client might), which its ``ToolOutput`` keeps as raw output."""

    def lookup(input: str) -> Response:
        """Look lighthouses up."""
        nodes = [
            NodeWithScore(node=n, score=s) for n, s in zip(SOURCE_NODES, SOURCE_SCORES, strict=True)
        ]
        return Response(response=f"Answer: {input}", source_nodes=nodes)

    return FunctionTool.from_defaults(lookup, name=name, description="Facts about lighthouses.")
