"""Who has a review item open: claims with an expiry, so reviewers see each other's work.

Opening an item claims it for ``CLAIM_TTL_S`` (5 minutes) unless someone else's claim on it is
still running; the page then says who holds it and until when, and the queue marks the items
others hold. A claim is a note, not a lock: the other reviewer can still label the item, and
the label's version check (``SqlReviewStore.add_label(expected_label_id=...)``) is what stops
one label silently replacing a newer one. Labelling releases the labeller's claim; an
abandoned claim simply expires::

    claim = store.claim(item_id, holder=session_id, reviewer="ana")
    if not claim.mine: print(f"{claim.reviewer} has it open until {claim.expires_ns}")
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ragtrace.review._pool import PooledDatabase

CLAIM_TTL_S = 300.0
MAX_HOLDER_CHARS = 200


@dataclass(frozen=True)
class Claim:
    """Someone has an item open.

    Attributes:
        item_id: The item.
        holder: Who holds it (the review app: a session; opaque to the store).
        reviewer: The name they gave, when they gave one.
        claimed_ns: Since when (UTC ns), kept while the same holder renews it.
        expires_ns: Until when.
        mine: Whether the asker holds it.
    """

    item_id: int
    holder: str
    reviewer: str | None
    claimed_ns: int
    expires_ns: int
    mine: bool = False


class ClaimStore(PooledDatabase):
    """The claims of a review store (a part of ``SqlReviewStore``)."""

    def claim(
        self,
        item_id: int,
        holder: str,
        reviewer: str | None = None,
        ttl_s: float = CLAIM_TTL_S,
        now_ns: int | None = None,
    ) -> Claim | None:
        """Claim an item for ``ttl_s`` unless another holder's claim runs; renew one's own.

        Returns:
            The claim now in force (``mine`` tells whose), or None for an unknown item.
        """
        if not holder or len(holder) > MAX_HOLDER_CHARS or not ttl_s > 0:
            raise ValueError("a claim needs a holder of 1-200 characters and a ttl > 0")
        now = now_ns if now_ns is not None else time.time_ns()
        expires = now + int(ttl_s * 1e9)
        name = (reviewer or "").strip()[:MAX_HOLDER_CHARS] or None
        with self._write() as cur:
            if cur.one("SELECT id FROM review_items WHERE id = ?", (item_id,)) is None:
                return None
            row = cur.one(
                "SELECT holder, reviewer, claimed_ns, expires_ns FROM review_claims"
                " WHERE item_id = ?" + self.dialect.for_update,
                (item_id,),
            )
            if row is not None and row[0] != holder and int(row[3]) > now:
                return Claim(item_id, str(row[0]), row[1], int(row[2]), int(row[3]))
            since = int(row[2]) if row is not None and row[0] == holder else now
            cur.execute(
                "INSERT INTO review_claims (item_id, holder, reviewer, claimed_ns, expires_ns)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (item_id) DO UPDATE SET"
                " holder = excluded.holder, reviewer = excluded.reviewer,"
                " claimed_ns = excluded.claimed_ns, expires_ns = excluded.expires_ns",
                (item_id, holder, name, since, expires),
            )
        return Claim(item_id, holder, name, since, expires, mine=True)

    def claims(
        self, item_ids: Sequence[int], holder: str | None = None, now_ns: int | None = None
    ) -> dict[int, Claim]:
        """The running claims on these items (``mine`` set for ``holder``'s)."""
        if not item_ids:
            return {}
        now = now_ns if now_ns is not None else time.time_ns()
        marks = ", ".join("?" * len(item_ids))
        with self._read() as cur:
            rows = cur.all(
                "SELECT item_id, holder, reviewer, claimed_ns, expires_ns FROM review_claims"
                f" WHERE item_id IN ({marks}) AND expires_ns > ?",
                (*item_ids, now),
            )
        return {
            int(r[0]): Claim(int(r[0]), str(r[1]), r[2], int(r[3]), int(r[4]), r[1] == holder)
            for r in rows
        }

    def release(self, item_id: int, holder: str) -> bool:
        """Drop ``holder``'s claim on an item; whether there was one."""
        with self._write() as cur:
            found = cur.one(
                "SELECT item_id FROM review_claims WHERE item_id = ? AND holder = ?",
                (item_id, holder),
            )
            cur.execute(
                "DELETE FROM review_claims WHERE item_id = ? AND holder = ?", (item_id, holder)
            )
        return found is not None
