"""The review store's tables and their migrations, shared by SQLite and PostgreSQL.

One schema for both databases: the statements below are written once with two placeholders
(``{pk}`` for an auto-increment primary key, ``{json}`` for a JSON text column) that each
``Dialect`` fills in. ``MIGRATIONS`` is an ordered list of (version, statements); a store applies
the ones newer than the version in ``review_schema`` inside one write transaction that holds the
database's lock (SQLite ``BEGIN IMMEDIATE``, a PostgreSQL advisory lock), so several processes
opening the same store at once migrate it exactly once.

Tables:
    review_items: one row per queued request (content, scores and reasons as JSON, the latest
        label's verdict and id copied in; ``label_id`` is the version a label is checked
        against, so one posted from a stale view is refused). Since version 3 also the turn's
        conversation: ``session_id``, ``user_id``, ``turn`` (indexed together with the request
        time, so a session's turns are one index range), the earlier turns and standalone
        question as JSON (``conversation_json``), the agent's tool calls as JSON
        (``tool_calls_json``) and ``llm_calls``.
    review_queue: one narrow row per item with what the queue sorts and filters on (priority,
        app, request time, verdict, primary reason, session id): pages, counts and neighbours
        read it and its indexes, never the wide content rows.
    review_scores: one row per score of an item (name, evaluator, kind, value, passed) for the
        evaluator / score-range filters and the agreement metrics, with the item's queue
        columns (priority, verdict, app, request time) copied in, so that the filters walk one
        index in queue order.
    review_reasons: one row per reason an item was queued, for the reason filter (with the
        same queue columns).
    review_labels: every label ever given (the latest one counts).
    review_claims: who has an item open, until when (one claim per item).

The question search has a trigram index of its own, made by each backend where the database
offers one (``SqliteReviewStore``: an FTS5 table; ``PostgresReviewStore``: ``pg_trgm``).
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 3


@dataclass(frozen=True)
class Dialect:
    """What differs between the databases.

    Attributes:
        name: ``sqlite`` or ``postgresql``.
        pk: The auto-increment primary key column type.
        json: The type of a JSON text column.
        for_update: Appended to a SELECT that must lock the rows it reads.
        placeholder: The driver's parameter marker.
    """

    name: str
    pk: str
    json: str
    for_update: str
    placeholder: str

    def sql(self, statement: str) -> str:
        """``statement`` written with ``?`` markers, in this driver's marker style."""
        return statement if self.placeholder == "?" else statement.replace("?", self.placeholder)


SQLITE = Dialect("sqlite", "INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT", "", "?")
POSTGRESQL = Dialect("postgresql", "BIGSERIAL PRIMARY KEY", "TEXT", " FOR UPDATE", "%s")

# What the queue sorts and filters on, copied onto each score and reason row, so that a filter
# on scores or reasons is one walk of one index in queue order (priority, then item id).
SCORE_INDEX_COLUMNS = "priority, item_id, value, verdict, app, request_ns"

VERSION_TABLE = "CREATE TABLE IF NOT EXISTS review_schema (version INTEGER NOT NULL)"

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE review_items (
                id {pk},
                record_key TEXT NOT NULL UNIQUE,
                trace_id TEXT NOT NULL,
                span_id TEXT NOT NULL,
                app TEXT NOT NULL,
                model TEXT,
                request_ns BIGINT NOT NULL,
                queued_ns BIGINT NOT NULL,
                status TEXT NOT NULL,
                error TEXT,
                query TEXT,
                response TEXT,
                reference TEXT,
                chunks_json {json} NOT NULL,
                scores_json {json} NOT NULL,
                reasons_json {json} NOT NULL,
                attributes_json {json} NOT NULL,
                primary_reason TEXT NOT NULL,
                priority INTEGER NOT NULL,
                verdict TEXT,
                failure_type TEXT,
                labelled_ns BIGINT
            )""",
            "CREATE INDEX review_items_order ON review_items (priority, id)",
            "CREATE INDEX review_items_verdict ON review_items (verdict, priority, id)",
            "CREATE INDEX review_items_app ON review_items (app)",
            "CREATE INDEX review_items_request ON review_items (request_ns)",
            "CREATE INDEX review_items_trace ON review_items (trace_id)",
            """CREATE TABLE review_scores (
                item_id BIGINT NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                evaluator TEXT NOT NULL,
                kind TEXT NOT NULL,
                value DOUBLE PRECISION,
                passed INTEGER,
                has_error INTEGER NOT NULL
            )""",
            "CREATE INDEX review_scores_item ON review_scores (item_id)",
            "CREATE INDEX review_scores_name ON review_scores (name, value)",
            "CREATE INDEX review_scores_evaluator ON review_scores (evaluator, value)",
            """CREATE TABLE review_reasons (
                item_id BIGINT NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
                reason TEXT NOT NULL,
                evaluator TEXT,
                detail TEXT NOT NULL
            )""",
            "CREATE INDEX review_reasons_item ON review_reasons (item_id)",
            "CREATE INDEX review_reasons_reason ON review_reasons (reason, item_id)",
            """CREATE TABLE review_labels (
                id {pk},
                item_id BIGINT NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
                verdict TEXT NOT NULL,
                failure_type TEXT,
                notes TEXT,
                corrected_answer TEXT,
                reviewer TEXT,
                created_ns BIGINT NOT NULL
            )""",
            "CREATE INDEX review_labels_item ON review_labels (item_id, id)",
        ),
    ),
    (
        2,
        (
            """CREATE TABLE review_queue (
                item_id BIGINT PRIMARY KEY REFERENCES review_items (id) ON DELETE CASCADE,
                priority INTEGER NOT NULL,
                app TEXT NOT NULL,
                request_ns BIGINT NOT NULL,
                verdict TEXT,
                primary_reason TEXT NOT NULL
            )""",
            "INSERT INTO review_queue (item_id, priority, app, request_ns, verdict, primary_reason)"
            " SELECT id, priority, app, request_ns, verdict, primary_reason FROM review_items",
            "CREATE INDEX review_queue_order"
            " ON review_queue (priority, item_id, verdict, app, request_ns)",
            "CREATE INDEX review_queue_verdict ON review_queue (verdict, priority, item_id)",
            "CREATE INDEX review_queue_app"
            " ON review_queue (app, priority, item_id, verdict, request_ns)",
            *(
                f"ALTER TABLE {table} ADD COLUMN {column}"
                for table in ("review_scores", "review_reasons")
                for column in (
                    "priority INTEGER NOT NULL DEFAULT 0",
                    "verdict TEXT",
                    "app TEXT NOT NULL DEFAULT ''",
                    "request_ns BIGINT NOT NULL DEFAULT 0",
                )
            ),
            *(
                f"UPDATE {table} SET (priority, verdict, app, request_ns) ="
                " (SELECT q.priority, q.verdict, q.app, q.request_ns FROM review_queue q"
                f" WHERE q.item_id = {table}.item_id)"
                for table in ("review_scores", "review_reasons")
            ),
            "DROP INDEX review_scores_name",
            "DROP INDEX review_scores_evaluator",
            "DROP INDEX review_reasons_reason",
            f"CREATE INDEX review_scores_name ON review_scores (name, {SCORE_INDEX_COLUMNS})",
            "CREATE INDEX review_scores_evaluator"
            f" ON review_scores (evaluator, {SCORE_INDEX_COLUMNS})",
            "DROP INDEX review_scores_item",  # looked up by item: with the value, or the reason
            "CREATE INDEX review_scores_item ON review_scores (item_id, value)",
            "DROP INDEX review_reasons_item",
            "CREATE INDEX review_reasons_item ON review_reasons (item_id, reason)",
            "CREATE INDEX review_reasons_reason"
            " ON review_reasons (reason, priority, item_id, verdict, app, request_ns)",
            "CREATE INDEX review_items_queued ON review_items (queued_ns)",
            "DROP INDEX review_items_order",  # the queue's order and filters: review_queue
            "DROP INDEX review_items_verdict",
            "DROP INDEX review_items_app",
            "DROP INDEX review_items_request",
            "ALTER TABLE review_items ADD COLUMN label_id BIGINT",
            "UPDATE review_items SET label_id ="
            " (SELECT MAX(l.id) FROM review_labels l WHERE l.item_id = review_items.id)",
            """CREATE TABLE review_claims (
                item_id BIGINT PRIMARY KEY REFERENCES review_items (id) ON DELETE CASCADE,
                holder TEXT NOT NULL,
                reviewer TEXT,
                claimed_ns BIGINT NOT NULL,
                expires_ns BIGINT NOT NULL
            )""",
        ),
    ),
    (
        3,
        (
            *(
                f"ALTER TABLE review_items ADD COLUMN {column}"
                for column in (
                    "session_id TEXT",
                    "user_id TEXT",
                    "turn INTEGER",
                    "conversation_json {json}",
                    "tool_calls_json {json}",
                    "llm_calls INTEGER NOT NULL DEFAULT 0",
                )
            ),
            "ALTER TABLE review_queue ADD COLUMN session_id TEXT",
            "CREATE INDEX review_items_session ON review_items (session_id, turn, request_ns)",
            "CREATE INDEX review_queue_session"
            " ON review_queue (session_id, priority, item_id, verdict, app, request_ns)",
        ),
    ),
)


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer ragtrace than this one."""


def statements_after(current: int, dialect: Dialect) -> list[tuple[int, list[str]]]:
    """The migrations newer than ``current``, rendered for ``dialect``, oldest first.

    Raises:
        SchemaTooNew: ``current`` is beyond ``SCHEMA_VERSION``.
    """
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"the review store has schema version {current}; this ragtrace knows up to "
            f"{SCHEMA_VERSION}: upgrade ragtrace"
        )
    return [
        (version, [s.format(pk=dialect.pk, json=dialect.json) for s in statements])
        for version, statements in MIGRATIONS
        if version > current
    ]
