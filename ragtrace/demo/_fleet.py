"""The demo shipping to ``ragtrace worker`` processes: count what the fleet did with its records.

With ``--queue``, the demo app samples and ships; workers elsewhere evaluate. At the end the
demo waits (bounded) until the workers have published or dead-lettered everything it shipped,
then shows the accounting: shipped = published + dead-lettered + still queued, and every record
the app could not ship is a counted drop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._pipeline.queues.redis_streams import StreamCommands, connect


@dataclass(frozen=True)
class FleetTally:
    """What happened to the records this run shipped (counter deltas over the run)."""

    stream: str
    shipped: int
    published: int
    dead_lettered: int
    queued: int

    @property
    def balanced(self) -> bool:
        return self.shipped == self.published + self.dead_lettered + self.queued


class QueueUnreachable(ConnectionError):
    """The queue's Redis cannot be read: down, refusing, or not a Redis server."""


class FleetCounter:
    """Reads the fleet's counters at the start and the end of a run.

    Args:
        url: The queue URL the demo ships to.

    Raises:
        ValueError: Not a queue URL.
        QueueUnreachable: Its Redis cannot be read (here, and from ``settle``).
    """

    def __init__(self, url: str) -> None:
        self.options = RedisQueueOptions.from_url(url)
        self._commands = StreamCommands(connect(self.options), self.options)
        self._start = self._read()

    def settle(self, timeout_s: float) -> FleetTally:
        """Wait up to ``timeout_s`` for the workers to finish this run's records; the tally."""
        deadline = time.monotonic() + timeout_s
        while True:
            tally = self._tally()
            if tally.queued == 0 or time.monotonic() >= deadline:
                return tally
            time.sleep(0.2)

    def _tally(self) -> FleetTally:
        now = self._read()
        shipped = now["submitted"] - self._start["submitted"]
        published = now["published"] - self._start["published"]
        dead = now["dead_lettered"] - self._start["dead_lettered"]
        return FleetTally(
            self.options.stream, shipped, published, dead, max(0, shipped - published - dead)
        )

    def _read(self) -> dict[str, int]:
        try:
            stats = self._commands.stats()
        except Exception as exc:  # redis's errors are not OSErrors; any of them means unread
            raise QueueUnreachable(
                f"cannot read the queue at {self.options.safe_url}: {exc}"
            ) from None
        return {k: stats.get(k, 0) for k in ("submitted", "published", "dead_lettered")}


def format_tally(tally: FleetTally, app_drops: int) -> str:
    """The summary line of the queue's accounting."""
    check = "balanced" if tally.balanced else "NOT balanced"
    return (
        f"  queue            stream {tally.stream}: {tally.shipped} shipped = "
        f"{tally.published} published by workers + {tally.dead_lettered} dead-lettered + "
        f"{tally.queued} still queued ({check}); {app_drops} dropped in the app"
    )
