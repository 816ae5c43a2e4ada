"""Labels in the review store: add one (with the stale-view check), read an item's history.

``add_label(item_id, label, expected_label_id=...)`` stores a label and copies its verdict onto
the item's queue rows, unless the item's latest label is no longer the one the reviewer's view
showed (``expected_label_id``, the item's ``label_id``: the version a view carries): then it
raises ``StaleLabel`` with the newer label and stores nothing. A part of ``SqlReviewStore``.
"""

from __future__ import annotations

import time

from ragtrace.review._items import Label, StoredLabel
from ragtrace.review._pool import PooledDatabase
from ragtrace.review._sql import LABEL_COLUMNS, label_from_row


class StaleLabel(Exception):
    """A label was given from a view of the item older than its latest label.

    Attributes:
        item_id: The item.
        latest: The label given since (None when labels were deleted since).
    """

    def __init__(self, item_id: int, latest: StoredLabel | None) -> None:
        self.item_id = item_id
        self.latest = latest
        who = (latest.label.reviewer if latest else None) or "another reviewer"
        what = f"{latest.label.verdict!r}" if latest else "a label"
        super().__init__(
            f"item {item_id} was labelled {what} by {who} after this view of it was made; "
            "the label was not saved"
        )


class LabelStore(PooledDatabase):
    """The labels of a review store (a part of ``SqlReviewStore``)."""

    def add_label(
        self,
        item_id: int,
        label: Label,
        created_ns: int | None = None,
        *,
        expected_label_id: int | None = None,
        holder: str | None = None,
    ) -> StoredLabel:
        """Label an item (the newest label counts).

        Args:
            item_id: The item.
            label: The label.
            created_ns: When it was given (default: now).
            expected_label_id: The id of the item's latest label when the reviewer's view was
                made (0: it had none); None skips the check.
            holder: The claim this reviewer holds on the item, released with the label.

        Raises:
            KeyError: No item has this id.
            StaleLabel: The item's latest label is not ``expected_label_id`` any more.
        """
        created = created_ns or time.time_ns()
        with self._write() as cur:
            current = cur.one(
                "SELECT label_id FROM review_items WHERE id = ?" + self.dialect.for_update,
                (item_id,),
            )
            if current is None:
                raise KeyError(f"no review item {item_id}")
            latest = int(current[0] or 0)
            if expected_label_id is not None and latest != expected_label_id:
                row = cur.one(
                    "SELECT " + LABEL_COLUMNS + " FROM review_labels l WHERE l.id = ?", (latest,)
                )
                raise StaleLabel(item_id, None if row is None else label_from_row(row))
            row = cur.one(
                "INSERT INTO review_labels (item_id, verdict, failure_type, notes,"
                " corrected_answer, reviewer, created_ns) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (
                    item_id,
                    label.verdict,
                    label.failure_type,
                    label.notes,
                    label.corrected_answer,
                    label.reviewer,
                    created,
                ),
            )
            label_id = int(row[0])
            cur.execute(
                "UPDATE review_items SET verdict = ?, failure_type = ?, labelled_ns = ?,"
                " label_id = ? WHERE id = ?",
                (label.verdict, label.failure_type, created, label_id, item_id),
            )
            for table in ("review_queue", "review_scores", "review_reasons"):
                cur.execute(
                    f"UPDATE {table} SET verdict = ? WHERE item_id = ?", (label.verdict, item_id)
                )
            if holder is not None:
                cur.execute(
                    "DELETE FROM review_claims WHERE item_id = ? AND holder = ?", (item_id, holder)
                )
        return StoredLabel(label_id, item_id, created, label)

    def label_version(self, item_id: int) -> int:
        """The id of the item's latest label (0: none; also for an unknown item): what a view
        of the item passes back as ``expected_label_id``."""
        with self._read() as cur:
            row = cur.one("SELECT label_id FROM review_items WHERE id = ?", (item_id,))
        return 0 if row is None or row[0] is None else int(row[0])

    def labels(self, item_id: int) -> list[StoredLabel]:
        """Every label of an item, newest first."""
        with self._read() as cur:
            rows = cur.all(
                "SELECT " + LABEL_COLUMNS + " FROM review_labels l WHERE l.item_id = ?"
                " ORDER BY l.id DESC",
                (item_id,),
            )
        return [label_from_row(r) for r in rows]
