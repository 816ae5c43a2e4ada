"""Every span attribute, span kind and event name ragtrace writes, in one place.

OpenInference names (``openinference.span.kind``, ``input.value``, ``retrieval.documents.N...``)
let Phoenix and Datadog render the spans; OpenTelemetry GenAI names (``gen_ai.*``) follow the
GenAI semantic conventions; ragtrace's own names live under ``ragtrace.*``.
"""

from __future__ import annotations

import functools

# --- OpenInference -------------------------------------------------------------------------
OI_SPAN_KIND = "openinference.span.kind"
OI_KIND_CHAIN = "CHAIN"
OI_KIND_RETRIEVER = "RETRIEVER"
OI_KIND_LLM = "LLM"
OI_KIND_EVALUATOR = "EVALUATOR"
OI_KIND_AGENT = "AGENT"
OI_KIND_TOOL = "TOOL"

SESSION_ID = "session.id"
"""OpenInference: the conversation a span belongs to (Phoenix's Sessions tab groups by it)."""
USER_ID = "user.id"
TOOL_NAME = "tool.name"
TOOL_PARAMETERS = "tool.parameters"

INPUT_VALUE = "input.value"
INPUT_MIME_TYPE = "input.mime_type"
OUTPUT_VALUE = "output.value"
OUTPUT_MIME_TYPE = "output.mime_type"
MIME_TEXT = "text/plain"
MIME_JSON = "application/json"

RETRIEVAL_DOCUMENTS_PREFIX = "retrieval.documents"
DOC_ID = "document.id"
DOC_CONTENT = "document.content"
DOC_SCORE = "document.score"
DOC_METADATA = "document.metadata"

LLM_MODEL_NAME = "llm.model_name"
LLM_PROVIDER = "llm.provider"
LLM_INPUT_MESSAGES = "llm.input_messages"
LLM_OUTPUT_MESSAGES = "llm.output_messages"
MESSAGE_ROLE = "message.role"
MESSAGE_CONTENT = "message.content"
LLM_TOKEN_PROMPT = "llm.token_count.prompt"
LLM_TOKEN_COMPLETION = "llm.token_count.completion"
LLM_TOKEN_TOTAL = "llm.token_count.total"
LLM_INVOCATION_PARAMETERS = "llm.invocation_parameters"

OI_PROJECT_NAME = "openinference.project.name"
"""The resource attribute Phoenix files a trace's spans under (its project)."""
SERVICE_NAME = "service.name"

METADATA = "metadata"


def document_attr(index: int, field: str) -> str:
    """``retrieval.documents.{index}.{field}``, the OpenInference name of one chunk field."""
    return f"{RETRIEVAL_DOCUMENTS_PREFIX}.{index}.{field}"


@functools.lru_cache(maxsize=1024)
def document_keys(index: int) -> tuple[str, str, str, str]:
    """The id, score, content and metadata attribute names of chunk ``index`` (cached: they
    are built for every chunk of every request)."""
    return (
        document_attr(index, DOC_ID),
        document_attr(index, DOC_SCORE),
        document_attr(index, DOC_CONTENT),
        document_attr(index, DOC_METADATA),
    )


def message_attr(prefix: str, index: int, field: str) -> str:
    """``{prefix}.{index}.{field}``, the OpenInference name of one chat message field."""
    return f"{prefix}.{index}.{field}"


# --- OpenTelemetry GenAI ---------------------------------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_OP_RETRIEVAL = "retrieval"
GEN_AI_OP_CHAT = "chat"
GEN_AI_OP_TEXT_COMPLETION = "text_completion"
GEN_AI_OP_INVOKE_WORKFLOW = "invoke_workflow"
GEN_AI_OP_INVOKE_AGENT = "invoke_agent"
GEN_AI_OP_EXECUTE_TOOL = "execute_tool"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"
GEN_AI_RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"

GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
GEN_AI_EVALUATION_RESULT_EVENT = "gen_ai.evaluation.result"

# --- ragtrace's own ------------------------------------------------------------------------
RAGTRACE_APP = "ragtrace.app"
RAGTRACE_STATUS = "ragtrace.request.status"
RAGTRACE_CHUNK_SOURCE = "ragtrace.retrieval.source"
RAGTRACE_CHUNKS_TOTAL = "ragtrace.retrieval.chunks_total"
RAGTRACE_CHUNKS_DROPPED = "ragtrace.retrieval.chunks_dropped"
RAGTRACE_RETRIEVAL_STEP = "ragtrace.retrieval.step"
"""Which retrieval of the request a retriever span was (0 for the first)."""
RAGTRACE_CONTEXT_USED = "ragtrace.context.used"
"""On the RAG root: the places (in the record's chunks) of the chunks whose text reached the
model call that produced the answer (``Chunk.used``); absent when that is not known."""
RAGTRACE_CONTEXT_UNUSED = "ragtrace.context.unused"
"""On the RAG root: the places of the chunks that did not reach it (written with
``ragtrace.context.used``; a chunk in neither list is not known either way)."""
RAGTRACE_RETRIEVAL_NESTED = "ragtrace.retrieval.nested"
"""On a retriever run inside another retriever (an ensemble's member): its chunks stay on its
span as evidence and are not the request's context (the outermost retriever's result is)."""
RAGTRACE_TURN = "ragtrace.conversation.turn"
"""How many user turns came before this request in its conversation."""
RAGTRACE_HISTORY_TURNS = "ragtrace.conversation.history_turns"
RAGTRACE_STANDALONE_QUERY = "ragtrace.conversation.standalone_query"
RAGTRACE_LLM_CALLS = "ragtrace.agent.llm_calls"
RAGTRACE_TOOL_CALLS = "ragtrace.agent.tool_calls"
RAGTRACE_TRUNCATED = "ragtrace.truncated"
RAGTRACE_REDACTION = "ragtrace.redaction"
"""The redaction policies a request's texts went through, comma-separated (``pii``)."""
RAGTRACE_PROMPT_CHUNK_REFS = "ragtrace.llm.prompt_chunk_refs"
RAGTRACE_ERROR_TYPE = "error.type"
RAGTRACE_DOCUMENTS_OMITTED = "ragtrace.retrieval.documents_omitted"
"""Chunks whose ``retrieval.documents.N.*`` attributes did not fit the span's attribute limit
(they stay in ``gen_ai.retrieval.documents`` and in the record)."""
RAGTRACE_ATTRIBUTES_CAPPED = "ragtrace.span.attributes_capped"
"""Attributes left off a span so that it stays within the provider's attribute count limit."""

# Placeholder written into an LLM prompt where it repeats a retrieved chunk's text verbatim
# (``dedupe_prompt_chunks``, off by default), so the chunk's text is kept once per trace. No
# braces: trace UIs read ``{{...}}`` and ``{...}`` as template variables of a prompt.
CHUNK_REF_TEMPLATE = "[ragtrace.chunk:%d]"

SPAN_NAME_RAG = "rag"
SPAN_NAME_RETRIEVAL = "retrieval"
SPAN_NAME_EVALUATION = "ragtrace.evaluation"


def evaluation_span_name(name: str) -> str:
    """``evaluate <name>``: an evaluation span, named after its evaluator (or score)."""
    return f"evaluate {name}"


# --- evaluation results (ragtrace's own, beside gen_ai.evaluation.*) --------------------------
RAGTRACE_EVALUATOR = "ragtrace.evaluation.evaluator"
RAGTRACE_EVALUATION_KIND = "ragtrace.evaluation.kind"
RAGTRACE_EVALUATION_MODEL = "ragtrace.evaluation.model"
RAGTRACE_EVALUATION_THRESHOLD = "ragtrace.evaluation.threshold"
RAGTRACE_EVALUATION_PASSED = "ragtrace.evaluation.passed"
RAGTRACE_EVALUATION_DIRECTION = "ragtrace.evaluation.direction"
RAGTRACE_EVALUATION_ERROR = "ragtrace.evaluation.error"
RAGTRACE_EVALUATION_DETAILS = "ragtrace.evaluation.details"
RAGTRACE_EVALUATION_TRACE_ID = "ragtrace.evaluation.trace_id"
"""On an evaluation span (a trace of its own): the evaluated request's trace id."""
RAGTRACE_EVALUATION_SPAN_ID = "ragtrace.evaluation.span_id"
"""On an evaluation span: the evaluated request's RAG span id."""


def inline_score_attr(name: str) -> str:
    """``ragtrace.evaluation.<name>.score``: an inline evaluator's score on the RAG span."""
    return f"ragtrace.evaluation.{name}.score"


def score_label_attr(name: str) -> str:
    """``ragtrace.evaluation.<name>.label``: a score's verdict (pass, fail, error) or label."""
    return f"ragtrace.evaluation.{name}.label"


def inline_passed_attr(name: str) -> str:
    """``ragtrace.evaluation.<name>.passed``: whether an inline score passed its threshold."""
    return f"ragtrace.evaluation.{name}.passed"
