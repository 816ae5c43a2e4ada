"""HTML of the review app: the queue page, the record page, error pages.

Captured content is untrusted (a question can hold ``<script>``; an answer can hold HTML that
an LLM was tricked into writing): every value that reaches a page goes through ``e()``
(``html.escape`` with quotes), URLs are built from quoted parts and then escaped, and the pages
carry no inline script or style, so the Content-Security-Policy the server sends
(``script-src 'self'``) blocks anything that slipped through. The only script is
``/static/review.js`` (keyboard shortcuts).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from ragtrace.review import _conversation_html as conversation_html
from ragtrace.review._claims import Claim
from ragtrace.review._conversations import SessionTurn
from ragtrace.review._evidence import chunk_relevance, merged_ranges, unsupported
from ragtrace.review._filters import filter_to_params, format_time
from ragtrace.review._items import FAILURE_TYPES, QueueFilter, ReviewItem, StoredLabel
from ragtrace.review._rules import REASON_NAMES
from ragtrace.review._sql import Facets, Page

TRACE_URL_PRESETS = {
    "jaeger": "http://localhost:16686/trace/{trace_id}",
    "phoenix": "http://localhost:6006/redirects/spans/{span_id}",
}
SHORTCUTS = (
    ("j / k", "next / previous item (on the queue: move the selection)"),
    ("o or Enter", "open the selected item (queue)"),
    ("g / b / u", "verdict good / bad / unsure"),
    ("1 - 6, 0", "failure type (" + ", ".join(FAILURE_TYPES) + "), none"),
    ("n / c", "write notes / a corrected answer (Esc leaves the field)"),
    ("s or Ctrl+Enter", "save the label and go to the next item"),
    ("q", "back to the queue"),
    ("?", "show or hide this help"),
)


def e(value: object) -> str:
    """Escaped text for HTML content and quoted attributes."""
    return html.escape("" if value is None else str(value), quote=True)


@dataclass(frozen=True)
class TraceLinks:
    """Links from an item to its trace in a tracing UI.

    ``template`` holds ``{trace_id}``, ``{span_id}`` and ``{app}`` (URL-quoted when filled);
    a preset name (``jaeger``, ``phoenix``) stands for its localhost URL.

    Raises:
        ValueError: Not an http(s) URL, or no placeholder in it.
    """

    template: str | None = None

    def __post_init__(self) -> None:
        template = TRACE_URL_PRESETS.get(self.template or "", self.template)
        object.__setattr__(self, "template", template)
        if template is None:
            return
        if not template.startswith(("http://", "https://")):
            raise ValueError(f"trace URL template must start with http:// or https://: {template}")
        if "{trace_id}" not in template and "{span_id}" not in template:
            raise ValueError("trace URL template needs {trace_id} or {span_id}")

    def href(self, item: ReviewItem) -> str | None:
        """The link for ``item`` (None without a template or without trace ids)."""
        if self.template is None or not item.trace_id:
            return None
        url = self.template
        for key, value in (
            ("trace_id", item.trace_id),
            ("span_id", item.span_id),
            ("app", item.app),
        ):
            url = url.replace("{" + key + "}", quote(value, safe=""))
        return url


def layout(title: str, body: str, page: str) -> str:
    """A whole page around ``body`` (``page`` names it for the script)."""
    rows = "".join(f"<tr><th><kbd>{e(k)}</kbd></th><td>{e(v)}</td></tr>" for k, v in SHORTCUTS)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · ragtrace review</title>"
        '<link rel="stylesheet" href="/static/review.css">'
        '<script src="/static/review.js" defer></script></head>'
        f'<body data-page="{e(page)}"><header><a class="brand" href="/queue">ragtrace review</a>'
        '<button type="button" id="help-toggle" title="Keyboard shortcuts">?</button></header>'
        f"<main>{body}</main>"
        '<aside id="help" hidden><h2>Keyboard shortcuts</h2>'
        f"<table>{rows}</table></aside></body></html>"
    )


def error_page(status: int, message: str) -> str:
    """A page that says what went wrong."""
    body = f'<h1>{status}</h1><p class="error">{e(message)}</p><p><a href="/queue">Queue</a></p>'
    return layout(str(status), body, "error")


def queue_page(
    page: Page,
    filters: QueueFilter,
    facets: Facets,
    saved: int | None = None,
    claims: Mapping[int, Claim] | None = None,
) -> str:
    """The queue: filters, one row per item (with who else has it open), paging."""
    params = filter_to_params(filters)
    held = claims or {}
    rows = "".join(_queue_row(item, params, held.get(item.id)) for item in page.items)
    if not rows:
        rows = '<tr><td colspan="8" class="empty">Nothing matches these filters.</td></tr>'
    first, last = page.offset + 1, page.offset + len(page.items)
    total = f"{page.total:,}+" if page.more else f"{page.total:,}"
    pager = [f'<span class="range">{first if page.items else 0}-{last} of {total}</span>']
    if page.offset > 0:
        prev = {**params, "offset": str(max(0, page.offset - page.limit))}
        pager.insert(0, f'<a data-nav="prev-page" href="/queue?{e(urlencode(prev))}">previous</a>')
    if last < page.total or (page.more and len(page.items) == page.limit):
        nxt = {**params, "offset": str(last)}
        pager.append(f'<a data-nav="next-page" href="/queue?{e(urlencode(nxt))}">next</a>')
    body = (
        f'<h1>Review queue <span class="count">{total} items</span></h1>'
        + _saved(saved)
        + _filter_form(filters, facets)
        + '<table class="queue"><thead><tr><th>#</th><th>Priority</th><th>Reasons</th>'
        "<th>Question</th><th>Failing scores</th><th>App</th><th>Time (UTC)</th>"
        f"<th>Verdict</th></tr></thead><tbody>{rows}</tbody></table>"
        f'<nav class="pager">{" ".join(pager)}</nav>'
    )
    return layout("Queue", body, "queue")


@dataclass(frozen=True)
class RecordView:
    """What the record page shows.

    Attributes:
        item: The item.
        labels: Its labels, newest first.
        neighbours: The items before and after it in the filtered queue.
        filters: The queue's filters (kept in every link).
        csrf: The form's token.
        links: Links to the trace.
        saved: The item a label was just saved for.
        version: The item's latest label id, sent back with the form (the stale-view check).
        claim: The claim in force on the item (this reviewer's, or who else has it open).
        refused: Why the label just posted was not saved.
        session_turns: The queued turns of the item's session, in turn order (the item's
            own among them), when it has a session.
    """

    item: ReviewItem
    labels: Sequence[StoredLabel]
    neighbours: tuple[int | None, int | None]
    filters: QueueFilter
    csrf: str
    links: TraceLinks
    saved: int | None = None
    version: int = 0
    claim: Claim | None = None
    refused: str | None = None
    session_turns: Sequence[SessionTurn] = ()


def record_page(view: RecordView) -> str:
    """One item: its conversation (earlier turns, the session's other queued turns), question,
    answer with unsupported parts marked, tool calls, chunks, scores, label form."""
    item, labels, filters, links = view.item, view.labels, view.filters, view.links
    params = filter_to_params(filters)
    query = f"?{urlencode(params)}" if params else ""
    prev_id, next_id = view.neighbours
    nav = [f'<a data-nav="queue" href="/queue{e(query)}">queue</a>']
    if prev_id is not None:
        nav.append(f'<a data-nav="prev-item" href="/item/{prev_id}{e(query)}">previous</a>')
    if next_id is not None:
        nav.append(f'<a data-nav="next-item" href="/item/{next_id}{e(query)}">next</a>')
    flags = unsupported(item.response, item.scores)
    unfound = [f for f in flags if f.start is None]
    missing = "".join(f"<li>{e(f.text)} <small>({e(f.evaluator)})</small></li>" for f in unfound)
    body = (
        f'<nav class="itemnav">{" ".join(nav)}</nav>'
        + _saved(view.saved)
        + _refused(view.refused)
        + _held(view.claim)
        + f"<h1>Item {item.id} {_reasons(item)}</h1>"
        + '<div class="record"><div class="content">'
        + _meta(item, links)
        + conversation_html.session_section(item, view.session_turns, query)
        + conversation_html.conversation_section(item)
        + f'<section><h2>Question</h2><div class="text" id="query">{e(item.query)}</div>'
        + conversation_html.standalone_question(item)
        + "</section>"
        + '<section><h2>Answer</h2><div class="text" id="answer">'
        + _highlighted(item.response or "", merged_ranges(flags))
        + "</div>"
        + (
            f'<p>Unsupported, not found in the answer:</p><ul class="unfound">{missing}</ul>'
            if missing
            else ""
        )
        + "</section>"
        + conversation_html.tool_calls_section(item)
        + _chunks(item)
        + _scores(item)
        + "</div>"
        + '<aside class="labelling">'
        + _label_form(item, labels, view.csrf, query, view.version)
        + _history(labels)
        + "</aside></div>"
    )
    return layout(f"Item {item.id}", body, "record")


# --- pieces ----------------------------------------------------------------------------------


def _queue_row(item: ReviewItem, params: Mapping[str, str], claim: Claim | None) -> str:
    href = f"/item/{item.id}" + (f"?{urlencode(params)}" if params else "")
    failing = ", ".join(
        f"{s.score.name} {_num(s.score.value)}" for s in item.scores if s.score.passed is False
    )
    question = (item.query or "")[:200]
    return (
        f'<tr data-href="{e(href)}"><td><a href="{e(href)}">{item.id}</a></td>'
        f"<td>{item.priority}</td><td>{_reasons(item)}</td>"
        f'<td class="question">{e(question)}</td><td>{e(failing)}</td><td>{e(item.app)}</td>'
        f"<td>{e(format_time(item.request_ns))}</td>"
        f"<td>{_verdict_badge(item.verdict)}{_open_by(claim)}</td></tr>"
    )


def _open_by(claim: Claim | None) -> str:
    """A badge on a queue row that someone else has open."""
    if claim is None or claim.mine:
        return ""
    until = format_time(claim.expires_ns)
    return (
        f' <span class="badge held" title="open until {e(until)} UTC">'
        f"open by {e(claim.reviewer or 'another reviewer')}</span>"
    )


def _held(claim: Claim | None) -> str:
    """Who else has the item open (nothing when this reviewer holds it)."""
    if claim is None or claim.mine:
        return ""
    who = e(claim.reviewer or "Another reviewer")
    return (
        f'<p class="held" role="status">{who} has had this item open since '
        f"{e(format_time(claim.claimed_ns))} UTC (until {e(format_time(claim.expires_ns))} "
        "UTC unless they stay on it). You can still label it: a label they save first "
        "will be shown to you instead of being overwritten.</p>"
    )


def _refused(message: str | None) -> str:
    if message is None:
        return ""
    return (
        f'<p class="refused" role="alert">Not saved: {e(message)}. Their label is in the '
        "history beside the form: read it, then label again if you still disagree.</p>"
    )


def _filter_form(f: QueueFilter, facets: Facets) -> str:
    since = "" if f.since_ns is None else format_time(f.since_ns)
    until = "" if f.until_ns is None else format_time(f.until_ns)
    labelled = _select(
        "labelled", [("no", "not yet"), ("yes", "labelled"), ("all", "all")], f.labelled, None
    )
    return (
        '<form class="filters" method="get" action="/queue">'
        f"<label>Reason {_select('reason', _pairs(facets.reasons), f.reason)}</label>"
        f"<label>Evaluator {_select('evaluator', _pairs(facets.evaluators), f.evaluator)}</label>"
        f'<label>Score from <input type="number" name="min" step="any" size="5"'
        f' value="{e(_opt(f.min_score))}"></label><label>to <input type="number" name="max"'
        f' step="any" size="5" value="{e(_opt(f.max_score))}"></label>'
        f"<label>App {_select('app', _pairs(facets.apps), f.app)}</label>"
        '<label>From (UTC) <input type="datetime-local" step="1" name="since"'
        f' value="{e(since)}"></label><label>To (UTC) <input type="datetime-local" step="1"'
        f' name="until" value="{e(until)}"></label>'
        f"<label>Labelled {labelled}</label>"
        f'<label>Question <input type="search" name="q" value="{e(f.search)}"></label>'
        f'<label>Session <input type="search" name="session" value="{e(f.session)}"></label>'
        '<button type="submit">Filter</button> <a href="/queue">reset</a></form>'
    )


def _select(
    name: str, options: Iterable[tuple[str, str]], chosen: str | None, empty: str | None = "any"
) -> str:
    items = [] if empty is None else [f'<option value="">{e(empty)}</option>']
    for value, text in options:
        selected = " selected" if value == chosen else ""
        items.append(f'<option value="{e(value)}"{selected}>{e(text)}</option>')
    return f'<select name="{e(name)}">{"".join(items)}</select>'


def _meta(item: ReviewItem, links: TraceLinks) -> str:
    href = links.href(item)
    trace = e(item.trace_id or "unknown")
    if href is not None:
        trace = f'<a href="{e(href)}" target="_blank" rel="noopener noreferrer">{trace}</a>'
    rows = [
        ("App", e(item.app)),
        ("Model", e(item.model or "unknown")),
        ("Time (UTC)", e(format_time(item.request_ns))),
        ("Status", e(item.status) + (f" ({e(item.error)})" if item.error else "")),
        ("Priority", str(item.priority)),
        ("Trace", trace),
        ("Span", e(item.span_id or "unknown")),
        *conversation_html.meta_rows(item),
    ]
    cells = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    return f'<dl class="meta">{cells}</dl>'


def _highlighted(text: str, ranges: Sequence[tuple[int, int, tuple[str, ...]]]) -> str:
    parts: list[str] = []
    at = 0
    for start, end, names in ranges:
        parts.append(e(text[at:start]))
        title = "unsupported according to " + ", ".join(names)
        parts.append(f'<mark class="unsupported" title="{e(title)}">{e(text[start:end])}</mark>')
        at = end
    parts.append(e(text[at:]))
    return "".join(parts)


def _chunks(item: ReviewItem) -> str:
    columns = chunk_relevance(item.scores, item.chunks)
    entries = []
    for i, chunk in enumerate(item.chunks):
        head = [f"#{i + 1}", e(chunk.id or "no id")]
        if chunk.source:
            head.append(e(chunk.source))
        head.append(f"retrieval score {_num(chunk.score)}")
        if chunk.used is False:
            head.append("not seen by the answer's model call")
        head.extend(f"{e(name)} {_num(values[i])}" for name, values in columns)
        entries.append(
            f'<li><div class="chunkhead">{" · ".join(head)}</div>'
            f'<div class="text">{e(chunk.text)}</div></li>'
        )
    inner = "".join(entries) or "<li>No chunks were retrieved.</li>"
    return f'<section><h2>Retrieved chunks</h2><ol class="chunks">{inner}</ol></section>'


def _scores(item: ReviewItem) -> str:
    rows = []
    for stored in item.scores:
        s = stored.score
        outcome = (
            "error"
            if s.error
            else "fail"
            if s.passed is False
            else ("pass" if s.passed else "info")
        )
        details = ""
        if s.details:
            dumped = json.dumps(dict(s.details), ensure_ascii=False, indent=1)
            details = f"<details><summary>details</summary><pre>{e(dumped)}</pre></details>"
        rows.append(
            f'<tr class="{outcome}"><td>{e(s.name)}</td><td>{e(stored.evaluator)}</td>'
            f"<td>{e(s.evaluator_kind)}</td><td>{_num(s.value)}</td><td>{_num(s.threshold)}</td>"
            f'<td><span class="badge {outcome}">{outcome}</span></td><td>{e(s.label)}</td>'
            f"<td>{e(s.error or s.explanation)}{details}</td></tr>"
        )
    return (
        '<section><h2>Scores</h2><table class="scores"><thead><tr><th>Score</th>'
        "<th>Evaluator</th><th>Kind</th><th>Value</th><th>Threshold</th><th>Outcome</th>"
        f"<th>Label</th><th>Explanation</th></tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table></section>"
    )


def _label_form(
    item: ReviewItem, labels: Sequence[StoredLabel], csrf: str, query: str, version: int
) -> str:
    last = labels[0].label if labels else None
    verdicts = "".join(
        f'<label class="verdict {v}"><input type="radio" name="verdict" value="{v}" required'
        f"{' checked' if last is not None and last.verdict == v else ''}> {v} <kbd>{v[0]}</kbd>"
        "</label>"
        for v in ("good", "bad", "unsure")
    )
    failure = _select(
        "failure_type",
        [(t, f"{i} {t.replace('_', ' ')}") for i, t in enumerate(FAILURE_TYPES, 1)],
        last.failure_type if last else None,
        "0 none",
    )
    return (
        f'<form method="post" id="label-form" action="/item/{item.id}/label{e(query)}">'
        f'<h2>Label</h2><input type="hidden" name="csrf" value="{e(csrf)}">'
        f'<input type="hidden" name="version" value="{version}">'
        f"<fieldset><legend>Verdict</legend>{verdicts}</fieldset>"
        f"<label>Failure type {failure}</label>"
        # A newline right after <textarea> is dropped by HTML parsers: the content keeps its own.
        '<label>Notes <kbd>n</kbd><textarea name="notes" rows="3">\n'
        f"{e(last.notes if last else '')}</textarea></label>"
        '<label>Corrected answer <kbd>c</kbd><textarea name="corrected_answer" rows="5">\n'
        f"{e(last.corrected_answer if last else '')}</textarea></label>"
        '<label>Reviewer <input type="text" name="reviewer" autocomplete="username"'
        f' value="{e(last.reviewer if last else "")}"></label>'
        '<button type="submit">Save label <kbd>s</kbd></button></form>'
    )


def _history(labels: Sequence[StoredLabel]) -> str:
    if not labels:
        return ""
    rows = "".join(
        f"<li>{_verdict_badge(s.label.verdict)} {e(s.label.failure_type or '')} "
        f"<small>{e(format_time(s.created_ns))}"
        f"{' by ' + e(s.label.reviewer) if s.label.reviewer else ''}</small>"
        f"{'<p>' + e(s.label.notes) + '</p>' if s.label.notes else ''}</li>"
        for s in labels
    )
    return f'<section class="history"><h2>Labels so far</h2><ul>{rows}</ul></section>'


def _reasons(item: ReviewItem) -> str:
    return " ".join(
        f'<span class="badge reason {r.name if r.name in REASON_NAMES else "other"}"'
        f' title="{e(r.detail)}">{e(r.name.replace("_", " "))}</span>'
        for r in sorted(item.reasons, key=lambda r: -r.priority)
    )


def _verdict_badge(verdict: str | None) -> str:
    if verdict is None:
        return '<span class="badge none">unlabelled</span>'
    name = verdict if verdict in ("good", "bad", "unsure") else "other"
    return f'<span class="badge {name}">{e(verdict)}</span>'


def _saved(saved: int | None) -> str:
    if saved is None:
        return ""
    return f'<p class="saved" role="status">Label saved for item {saved}.</p>'


def _pairs(values: Iterable[str]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _opt(value: float | None) -> str:
    return "" if value is None else str(value)
