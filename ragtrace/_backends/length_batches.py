"""Forward passes of similar length: how a transformer encoder batches texts without padding waste.

A batch is padded to its longest text, and every padding token costs as much as a real one: a
record's 25 sentences sent as one batch, one of them 256 tokens long, cost 25 x 256 token
positions where the texts hold ~900 tokens (5-6 times the work; the encoder reads ~0.13-0.25 ms
of CPU per token position on a 2-core box). A pass also has a cost of its own (a few hundred
operator launches, the weights read again, small matrix products running below the CPU's peak:
about as much as ``pass_cost`` more token positions). ``length_groups`` balances the two: texts
sorted by token count, longest first, cut into the runs that cost least in all (each run's
longest times its texts, plus ``pass_cost``), each at most ``max_texts`` texts and
``max_positions`` token positions.

Outputs do not depend on the grouping: padding is masked out of attention and of the mean
pooling, so a text's vector is the same (bit for bit on the packaged MiniLM) alone or in any
pass.
"""

from __future__ import annotations

from collections.abc import Sequence

# Measured on the packaged MiniLM (onnxruntime, one thread): cutting a cold RAGTruth record's
# ~24 sentences at this cost per pass took ~2% less CPU than at 12 or than the earlier rule (a
# text joined a pass while it cost at most 8 padding positions), and 36 no less.
DEFAULT_PASS_COST = 24
DEFAULT_MAX_POSITIONS = 4_096


def length_groups(
    lengths: Sequence[int],
    *,
    max_texts: int,
    pass_cost: int = DEFAULT_PASS_COST,
    max_positions: int = DEFAULT_MAX_POSITIONS,
) -> list[list[int]]:
    """Indices of ``lengths`` (token counts) grouped into forward passes, longest first.

    Args:
        lengths: Token count of each text.
        max_texts: Most texts in one pass.
        pass_cost: What a pass costs beyond its token positions, in token positions.
        max_positions: Most token positions (texts x longest) in one pass; a text longer than
            this still gets a pass of its own.

    Raises:
        ValueError: ``max_texts`` below 1, or a negative ``pass_cost`` or ``max_positions``.
    """
    if max_texts < 1 or pass_cost < 0 or max_positions < 0:
        raise ValueError("max_texts must be >= 1, pass_cost and max_positions >= 0")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    longest_first = [lengths[i] for i in order]
    # cost[j]: the least cost of the first j texts; start[j]: where the last pass of it starts.
    cost = [0] * (len(order) + 1)
    start = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        best = None
        for first in range(end - 1, max(end - max_texts, 0) - 1, -1):
            positions = longest_first[first] * (end - first)
            if first < end - 1 and positions > max_positions:
                break  # earlier starts only hold more positions
            total = cost[first] + pass_cost + positions
            if best is None or total <= best:  # ties: the longer pass, fewer passes
                best, start[end] = total, first
        cost[end] = best if best is not None else 0
    groups: list[list[int]] = []
    end = len(order)
    while end:
        groups.append(order[start[end] : end])
        end = start[end]
    return groups[::-1]
