"""``ragtrace review``: the review queue from a terminal, and the web app.

    ragtrace review list [--reason pii] [--evaluator groundedness --max 0.5] [--labelled all]
                         [--session thread-42]
    ragtrace review show 12
    ragtrace review label 12 --verdict bad --failure-type hallucination --notes "wrong date"
    ragtrace review export --output labelled.jsonl
    ragtrace review calibrate [--evaluator faithfulness] [--reason any] [--since 30d] [--json]
    ragtrace review serve [--port 8765] [--trace-url jaeger] [--otlp-endpoint URL]
    ragtrace review prune [--max-items N] [--max-age-days D]

Every subcommand takes ``--db`` (or ``RAGTRACE_REVIEW_DB``) naming the store: a SQLite file (default
``ragtrace-review.db``) or a ``postgresql://`` URL. ``add_parser(subparsers)`` adds the command
to a parser; ``run(args)`` runs it and returns the exit status.

``serve`` prints the items waiting, the URL to open (with a token: a one-time login link,
``/queue?login=...``, good for one browser within 15 minutes) and its listening line, which
says where the token came from (``--token`` or ``$RAGTRACE_REVIEW_TOKEN``): never the token.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict
from typing import Any, TextIO

from ragtrace._config.arguments import number, one_line, positive, run_subcommand
from ragtrace._network.terminal import printable
from ragtrace.review import _calibration as calibration
from ragtrace.review._filters import filter_from_params, format_time
from ragtrace.review._items import FAILURE_TYPES, VERDICTS, Label, QueueFilter, ReviewItem
from ragtrace.review._store import DEFAULT_SQLITE_PATH, Retention, SqlReviewStore, open_store

DB_ENV = "RAGTRACE_REVIEW_DB"
TOKEN_ENV = "RAGTRACE_REVIEW_TOKEN"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``review`` and its subcommands to an argparse ``add_subparsers()`` object."""
    review = subparsers.add_parser(
        "review",
        help="the human review queue: list, show, label, export, serve the web app",
        description="Work through the requests the review rules queued: in a terminal or "
        "with `serve` in a browser.",
    )
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--db",
        default=os.environ.get(DB_ENV) or DEFAULT_SQLITE_PATH,
        help=f"SQLite file or postgresql:// URL (${DB_ENV}; default {DEFAULT_SQLITE_PATH})",
    )
    sub = review.add_subparsers(dest="review_command", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=help, parents=[store])
        return parser

    listing = command("list", "list queued items (unlabelled unless --labelled)")
    _filter_arguments(listing)
    listing.add_argument("--limit", type=positive(int), default=50, help="items shown (default 50)")
    listing.add_argument("--offset", type=number(int, 0), default=0, help="skip this many first")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")

    show = command("show", "show one item with its chunks, scores and labels")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true", help="as JSON")

    label = command("label", "label one item")
    label.add_argument("id", type=int)
    label.add_argument("--verdict", required=True, choices=VERDICTS)
    label.add_argument("--failure-type", choices=FAILURE_TYPES)
    label.add_argument("--notes")
    label.add_argument("--corrected-answer", help="what the answer should have been")
    label.add_argument("--reviewer", default=os.environ.get("USER"), help="default $USER")
    label.add_argument(
        "--otlp-endpoint", help="also send the human evaluation span there (OTLP/HTTP)"
    )

    export = command("export", "write labelled items as a JSONL data set")
    _filter_arguments(export, labelled=False)
    export.add_argument("--output", "-o", default="-", help="file to write (default stdout)")
    export.add_argument(
        "--only-with-reference", action="store_true", help="skip rows without a reference"
    )

    serve = command("serve", "serve the review web app")
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1 (loopback)")
    serve.add_argument(
        "--port",
        type=number(int, 0, 65535, inclusive=True),
        default=8765,
        help="default 8765; 0 = any free port",
    )
    serve.add_argument(
        "--token",
        default=None,
        help=f"access token, required beyond loopback (or set ${TOKEN_ENV})",
    )
    serve.add_argument(
        "--trace-url",
        help="link to traces: a URL with {trace_id} / {span_id} / {app}, or jaeger / phoenix",
    )
    serve.add_argument("--otlp-endpoint", help="send human evaluation spans there (OTLP/HTTP)")

    calibrate = command(
        "calibrate", "fit the faithfulness verdict's thresholds to the queue's labels"
    )
    calibrate.add_argument(
        "--evaluator", choices=calibration.EVALUATORS, default=calibration.EVALUATORS[0]
    )
    calibrate.add_argument(
        "--reason",
        default=calibration.DEFAULT_REASON,
        help=f"read items queued for this reason (default {calibration.DEFAULT_REASON}: an "
        "unbiased sample); 'any': every labelled item",
    )
    calibrate.add_argument("--app", help="only this application's items")
    calibrate.add_argument(
        "--since", help="only requests since then: ISO time or 30m / 24h / 7d ago"
    )
    calibrate.add_argument(
        "--min-labels",
        type=positive(int),
        default=calibration.MIN_EACH,
        help=f"of each kind, per calibration (default {calibration.MIN_EACH})",
    )
    calibrate.add_argument(
        "--min-gain",
        type=number(float, 0, 1, inclusive=True),
        default=calibration.MIN_GAIN,
        help=f"held-out balanced accuracy a new cut must add (default {calibration.MIN_GAIN})",
    )
    calibrate.add_argument(
        "--max-false-alarms",
        type=number(float, 0, 1),
        help="instead of the best balanced accuracy: the lowest cut that flags at most this "
        "share of faithful answers (e.g. 0.1)",
    )
    calibrate.add_argument("--json", action="store_true", help="the fits as JSON")

    prune = command("prune", "apply retention limits now")
    prune.add_argument("--max-items", type=positive(int), default=Retention.max_items)
    prune.add_argument("--max-age-days", type=number(float, 0, above_low=True), default=30.0)
    prune.add_argument(
        "--include-labelled", action="store_true", help="let the limits delete labelled items"
    )
    return review  # type: ignore[no-any-return]


def _filter_arguments(parser: argparse.ArgumentParser, labelled: bool = True) -> None:
    parser.add_argument("--reason", help="e.g. score_failed, pii, secret, disagreement")
    parser.add_argument("--evaluator", help="items with a score of this name")
    parser.add_argument("--min", dest="min_score", help="lowest score value")
    parser.add_argument("--max", dest="max_score", help="highest score value")
    parser.add_argument("--app")
    parser.add_argument("--since", help="ISO time or 30m / 24h / 7d ago")
    parser.add_argument("--until", help="ISO time or a duration ago")
    parser.add_argument("--verdict", choices=VERDICTS)
    parser.add_argument("--search", help="text in the question")
    parser.add_argument("--session", help="only the turns of this conversation (session id)")
    if labelled:
        parser.add_argument("--labelled", choices=("no", "yes", "all"), default="no")


def _filters(args: argparse.Namespace) -> QueueFilter:
    values = {
        "reason": args.reason,
        "evaluator": args.evaluator,
        "min": args.min_score,
        "max": args.max_score,
        "app": args.app,
        "since": args.since,
        "until": args.until,
        "verdict": args.verdict,
        "q": args.search,
        "session": args.session,
        "labelled": getattr(args, "labelled", "yes"),
    }
    return filter_from_params({k: v for k, v in values.items() if v is not None})


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``ragtrace review ...``; returns the exit status (2 for bad input, 1 for failure)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if args.review_command == "serve":  # it reads the settings: check them all before it opens
        from ragtrace._config import Config

        try:
            Config.resolve()
        except ValueError as exc:
            err.write(f"ragtrace review: {one_line(exc)}\n")
            return 2
    try:
        store = open_store(args.db)
    except Exception as exc:
        err.write(f"ragtrace review: cannot open {args.db}: {exc}\n")
        return 1
    try:
        handler = {
            "list": _list,
            "show": _show,
            "label": _label,
            "export": _export,
            "calibrate": _calibrate,
            "prune": _prune,
            "serve": _serve,
        }[args.review_command]
        return handler(store, args, out, err)
    except ValueError as exc:
        err.write(f"ragtrace review: {exc}\n")
        return 2
    finally:
        store.close()


def _list(store: SqlReviewStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    page = store.page(_filters(args), offset=args.offset, limit=args.limit)
    if args.json:
        for item in page.items:
            out.write(json.dumps(_summary(item), ensure_ascii=False) + "\n")
        return 0
    out.write(f"{'ID':>6}  {'PRI':>3}  {'VERDICT':9} {'TIME (UTC)':19}  REASONS / QUESTION\n")
    for item in page.items:
        reasons = ",".join(sorted({r.name for r in item.reasons}))
        question = " ".join((item.query or "").split())[:70]
        row = (
            f"{item.id:>6}  {item.priority:>3}  {item.verdict or '-':9} "
            f"{format_time(item.request_ns)}  [{reasons}] {question}"
        )
        out.write(printable(row) + "\n")
    shown = f"{page.offset + 1}-{page.offset + len(page.items)}" if page.items else "0"
    err.write(f"{shown} of {page.total}{'+' if page.more else ''} items\n")
    return 0


def _show(store: SqlReviewStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    item = store.get(args.id)
    if item is None:
        err.write(f"ragtrace review: no item {args.id}\n")
        return 1
    labels = store.labels(item.id)
    if args.json:
        from ragtrace.review._conversations import conversation_to_json, tool_calls_to_json
        from ragtrace.review._items import chunk_to_json

        data = {
            **_summary(item),
            "response": item.response,
            "chunks": [chunk_to_json(c) for c in item.chunks],
            "scores": [s.to_json() for s in item.scores],
            "reasons": [r.to_json() for r in item.reasons],
            "conversation": conversation_to_json(item.conversation),
            "tool_calls": tool_calls_to_json(item.tool_calls) or [],
            "llm_calls": item.llm_calls,
            "labels": [{**asdict(s.label), "at": format_time(s.created_ns)} for s in labels],
        }
        out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return 0

    def w(text: str) -> None:  # every field came from outside: no control character passes
        out.write(printable(text, keep="\n\t"))

    when = format_time(item.request_ns)
    w(f"Item {item.id}  app {item.app}  model {item.model or '-'}  {when}\n")
    w(f"trace {item.trace_id or '-'}  span {item.span_id or '-'}  priority {item.priority}\n")
    for r in item.reasons:
        w(f"  reason {r.name}: {r.detail}\n")
    conversation = item.conversation
    if conversation is not None:
        turn = "?" if conversation.turn is None else str(conversation.turn + 1)
        w(
            f"session {conversation.session_id or '-'}  user {conversation.user_id or '-'}  "
            f"turn {turn}\n"
        )
        if conversation.history:
            w("\nEarlier in the conversation:\n")
        for t in conversation.history:
            w(f"  {t.role}: {' '.join(t.content.split())[:300]}\n")
    w(f"\nQuestion:\n  {item.query or ''}\n\nAnswer:\n  {item.response or ''}\n")
    if item.tool_calls:
        w("\nTool calls:\n")
    for i, call in enumerate(item.tool_calls, 1):
        args_text = " ".join((call.arguments or "").split())[:200]
        w(f"  #{i} {call.name} {call.status} {call.duration_s:.3f}s {args_text}\n")
        if call.error:
            w(f"     error: {call.error}\n")
    w("\nChunks:\n")
    for i, chunk in enumerate(item.chunks, 1):
        score = "-" if chunk.score is None else f"{chunk.score:.3f}"
        w(f"  #{i} {chunk.id or '-'} (retrieval {score}): {' '.join(chunk.text.split())[:300]}\n")
    w("\nScores:\n")
    for stored in item.scores:
        sc = stored.score
        value = "-" if sc.value is None else f"{sc.value:.3f}"
        outcome = "error" if sc.error else {True: "pass", False: "fail", None: "-"}[sc.passed]
        w(f"  {sc.name:32} {value:>6} {outcome:5} {sc.error or sc.explanation or ''}\n")
    w("\nLabels:\n" if labels else "\nNot labelled yet.\n")
    for s in labels:
        w(
            f"  {format_time(s.created_ns)} {s.label.verdict} {s.label.failure_type or ''} "
            f"{s.label.reviewer or ''}: {s.label.notes or ''}\n"
        )
    return 0


def _label(store: SqlReviewStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragtrace.review._wiring import standalone_app

    label = Label(
        verdict=args.verdict,
        failure_type=args.failure_type,
        notes=args.notes,
        corrected_answer=args.corrected_answer,
        reviewer=args.reviewer,
    )
    with standalone_app(store, args.otlp_endpoint) as app:
        try:
            stored = app.labels.label(args.id, label)
        except KeyError:
            err.write(f"ragtrace review: no item {args.id}\n")
            return 1
    out.write(f"labelled item {stored.item_id}: {label.verdict}\n")
    return 0


def _export(store: SqlReviewStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragtrace.review._export import export_jsonl

    filters = _filters(args)
    to_file = args.output != "-"
    with open(args.output, "w", encoding="utf-8") if to_file else nullcontext(out) as handle:
        n = export_jsonl(store, handle, filters, only_with_reference=args.only_with_reference)
    err.write(f"exported {n} labelled items\n")
    return 0


def _calibrate(store: SqlReviewStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragtrace.review import _calibration_report as calibration_report

    options = calibration.FitOptions(
        min_each=args.min_labels, min_gain=args.min_gain, max_false_alarms=args.max_false_alarms
    )
    reason = None if args.reason == "any" else args.reason
    since_ns = filter_from_params({"since": args.since}).since_ns if args.since else None
    read = calibration.labelled_scores(store, args.evaluator, reason, args.app, since_ns)
    source = "every labelled item" if reason is None else f"items queued as {reason}"
    if args.since:
        source += f", requests since {format_time(since_ns or 0)}"
    if not read.rows:
        err.write(
            f"ragtrace review: no labelled answer to calibrate on ({source}; skipped: "
            f"{read.skipped_text()}). Label items good, or bad with --failure-type "
            "hallucination.\n"
        )
        return 1
    fits = calibration.fit_thresholds(read.rows, options)
    if args.json:
        body = calibration_report.as_json(args.evaluator, read, fits, source, options)
        out.write(json.dumps(body, indent=1) + "\n")
    else:
        out.write(calibration_report.render(args.evaluator, read, fits, source))
    return 0


def _prune(store: SqlReviewStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    retention = Retention(
        max_items=args.max_items,
        max_age_s=args.max_age_days * 86400.0,
        keep_labelled=not args.include_labelled,
    )
    out.write(f"deleted {store.prune(retention)} items\n")
    return 0


def _serve(store: SqlReviewStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragtrace._config import Config
    from ragtrace._network import listening_line
    from ragtrace._network.signals import wait_until_stopped
    from ragtrace.review._httpd import serve_review
    from ragtrace.review._pages import TraceLinks
    from ragtrace.review._server import LOGIN_LINK_TTL_S
    from ragtrace.review._wiring import standalone_app

    links = TraceLinks(args.trace_url)
    redact = Config.resolve().redact  # RAGTRACE_REDACT: notes and corrected answers
    token = args.token or os.environ.get(TOKEN_ENV) or None
    source = "--token" if args.token else f"${TOKEN_ENV}"
    with standalone_app(store, args.otlp_endpoint, links=links, token=token, redact=redact) as app:
        try:
            server = serve_review(app, args.host, args.port)
        except OSError as exc:
            err.write(f"ragtrace review: cannot serve on {args.host}:{args.port}: {exc}\n")
            return 1
        out.write(f"ragtrace review: {store.count()} items waiting in {store.url}\n")
        once = f"one-time login link, valid {LOGIN_LINK_TTL_S / 60:.0f} min; " if token else ""
        out.write(
            f"open {server.login_url()}  ({once}metrics at {server.url}/metrics; Ctrl-C stops)\n"
        )
        out.write(listening_line("ragtrace review:", server.url, args.host, token, source) + "\n")
        out.flush()
        try:
            wait_until_stopped()
        finally:
            server.close()
    return 0


def _summary(item: ReviewItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "priority": item.priority,
        "reasons": sorted({r.name for r in item.reasons}),
        "app": item.app,
        "model": item.model,
        "time": format_time(item.request_ns),
        "trace_id": item.trace_id,
        "span_id": item.span_id,
        "query": item.query,
        "failing": [s.score.name for s in item.scores if s.score.passed is False],
        "verdict": item.verdict,
        "failure_type": item.failure_type,
        "session_id": item.session_id,
        "turn": None if item.conversation is None else item.conversation.turn,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ragtrace.review list ...``: ``ragtrace review`` without ``ragtrace``."""
    return run_subcommand("review", add_parser, run, argv, prog="python -m ragtrace")
