"""Fit ragtrace's default toxicity head (ragtrace/evaluators/data/toxicity_head.json) on CPU.

    .venv/bin/python training/train_toxicity.py [--data-dir ../shared/data] [--write]

Every row of the tuning part of ``toxicity_mixed.dev.jsonl`` (surge-ai/toxicity, Davidson et
al. 2017, ToxiGen human-written seeds; MIT; ``label`` 1 = toxic) becomes one feature row through
the evaluator's own ``head_features``. The locked part (``_labelled_data``: 30% of the
near-duplicate groups of each source, by ``_labelled_data``'s seed) is never read here, so the alarm
benchmark (``alarms.py --part locked``) scores the head on rows it never saw. The features are
the re-normalised mean of the text's MiniLM sentence vectors and the logit of
alt-profanity-check's probability (385 numbers). An L2-regularised logistic regression maps them
to P(toxic), each fit weighing every (source, label) cell the same (``BALANCE``); its strength
``C`` is picked from ``CS`` by grouped cross-validation. The script prints the operating points
its rule gives (``POINT_RULES``) for ``ragtrace/evaluators/_toxicity.py``.

Validation, as the model card reports it:

- **out-of-fold** (the headline): 5 stratified folds grouped by near-duplicate text (the first
  50 characters, lower-cased: ToxiGen repeats a prefix across seeds), with ``C`` chosen by an
  inner grouped CV on each training part only, so no held-out row informs its own score;
- **leave one source out**: trained on two sources, scored on the third, to show how it
  generalises to text of a kind it never saw.

Both score a held-out row as the evaluator does: its windows and, for a window of several
sentences, each sentence too, the highest counting (``Toxicity.windows`` / ``.sentences``); the
out-of-fold score of the whole text alone is reported beside it. Each is reported overall and
per source as AUROC and F1 of the toxic class at 0.75 (the
evaluator's threshold; flagged when above it) and at 0.5. ``--write`` fits on every row with
the chosen ``C`` and writes the weights. Features are cached under training/results/; a cold
run takes about 80 s on one core, mostly embedding.

Until 2026-11-27 the head was fitted on every row of the file (the model card keeps those
figures); it is now fitted on the tuning part only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # data readers, split

import numpy as np
from _labelled_data import data_dir, split, toxicity
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold

from ragtrace._backends.classifier import PROFANITY_MODEL
from ragtrace._backends.embeddings import float32_backend, get_embedder
from ragtrace.evaluators._toxicity import HEAD_WEIGHTS, OPERATING_POINTS, Toxicity, head_features

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
FILE = "toxicity_mixed.dev.jsonl"
# Training-only rows (the data folder's TRAIN-DATA.md: Davidson tweets, none in any evaluation
# half), added to every fit at EXTRA_WEIGHT each: chosen from EXTRA_WEIGHTS by --choose-extra
# on the tuning part's out-of-fold scores (the weakest source's detection at the threshold
# that keeps every source's false alarms at FALSE_ALARMS or below).
EXTRA_FILE = "toxicity_train_extra.jsonl"
EXTRA_WEIGHTS = (0.0, 0.1, 0.3, 1.0)
EXTRA_WEIGHT = 0.0
# Each fit weighs its rows so that every (source, label) cell counts the same in total (the
# weights average 1): unweighted, Davidson's 714 tuning tweets set the head's scale and the
# threshold that keeps every source within FALSE_ALARMS catches less of ToxiGen and surge-ai.
# Chosen on the tuning part over five fold assignments (docs/decisions/toxicity-features.md);
# --unbalanced measures the head without it.
BALANCE = True
FALSE_ALARMS = 0.05
FOLDS = 5
CS = (0.3, 1.0, 3.0, 10.0)
SEED = 0
THRESHOLDS = (0.75, 0.5)
# The evaluator's operating points (strict, default, lenient) and the rule that chooses them
# on the out-of-fold scores (docs/decisions/alarm-budget.md): the lowest threshold of a 0.01
# grid whose false alarms stay within the share, of every source's non-toxic rows where the
# flag says so, else of all of them, on the out-of-fold scores of POINT_SEEDS' fold
# assignments pooled (one assignment moves the default by up to 0.05: a 3% share of a source's
# non-toxic rows is five or six texts). The script prints the points the rule gives; copy
# them into ragtrace/evaluators/_toxicity.py.
OPERATING = tuple(float(point["toxicity"] or 0.0) for point in OPERATING_POINTS.values())
POINT_RULES = {"strict": (0.10, False), "default": (0.03, True), "lenient": (0.01, False)}
POINT_SEEDS = (0, 1, 2, 3, 4)
NAME = "ragtrace-toxicity-head-2"  # -1: fitted without balancing (until 2026-11-29)


def load(data_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """The tuning part's rows and a key for the feature cache (the file's sha256 and the part)."""
    raw = (Path(data_dir) / FILE).read_bytes()
    tuning, _ = split(toxicity(Path(data_dir)))
    keep = {row.id for row in tuning}
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    rows = [row for row in rows if str(row["id"]) in keep]
    return rows, hashlib.sha256(raw + b":tuning").hexdigest()


def load_extra(data_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """The training-only rows and a key for their feature cache."""
    raw = (Path(data_dir) / EXTRA_FILE).read_bytes()
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    return rows, hashlib.sha256(raw).hexdigest()


def load_locked(data_dir: Path) -> list[dict[str, Any]]:
    """The locked part's rows (``--locked`` only: scored once per shipped change)."""
    _, locked = split(toxicity(Path(data_dir)))
    return [dict(row.fields) for row in locked]


def head_embedder_id() -> str:
    """The model id of the embedder ``head_features`` reads (float32 products, not the default
    embedder's int8 copy)."""
    return get_embedder(backend=float32_backend()).model_id


def features(texts: list[str], digest: str, name: str = "toxicity_features") -> np.ndarray:
    """``head_features`` of ``texts``, cached as ``name`` by data and model identity."""
    key = f"{digest[:16]}-{head_embedder_id()}-{PROFANITY_MODEL}"
    cache = RESULTS / f"{name}.npz"
    if cache.is_file():
        stored = np.load(cache, allow_pickle=False)
        if str(stored["key"]) == key and len(stored["X"]) == len(texts):
            return np.asarray(stored["X"])
    X = head_features(texts)
    RESULTS.mkdir(exist_ok=True)
    np.savez(cache, X=X, key=np.array(key))
    return X


def scored_pieces(rows: list[dict[str, Any]]) -> tuple[list[str], np.ndarray]:
    """What the evaluator scores for each row (its windows, then the sentences of a window of
    several) and the row each piece belongs to: a row's score is its highest piece's."""
    scorer = Toxicity()
    texts: list[str] = []
    owner: list[int] = []
    for i, row in enumerate(rows):
        windows = scorer.windows(row["text"])
        for piece in [*windows, *scorer.sentences(windows)]:
            texts.append(piece)
            owner.append(i)
    return texts, np.array(owner)


def highest(p: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Each row's highest piece probability (0 for a row with no piece)."""
    out = np.zeros(n)
    np.maximum.at(out, owner, p)
    return out


def groups(rows: list[dict[str, Any]]) -> np.ndarray:
    """Near-duplicate clusters: rows sharing their first 50 characters (lower-cased)."""
    return np.array([row["text"][:50].lower() for row in rows])


Extra = tuple[np.ndarray, np.ndarray, float]  # training-only rows: features, labels, weight


def balanced(y: np.ndarray, sources: np.ndarray | None) -> np.ndarray:
    """Row weights that give every (source, label) cell of these rows the same total weight
    and average 1 (all ones when ``sources`` is None: no balancing)."""
    if sources is None:
        return np.ones(len(y))
    cells = np.char.add(sources.astype(str), y.astype(str))
    names, index, counts = np.unique(cells, return_inverse=True, return_counts=True)
    return np.asarray(len(y) / (len(names) * counts[index]), dtype=float)


def fit(
    X: np.ndarray,
    y: np.ndarray,
    c: float,
    extra: Extra | None = None,
    sources: np.ndarray | None = None,
) -> LogisticRegression:
    """The logistic regression, fitted on these rows (balanced by ``sources`` when given) and
    ``extra``'s (each at its weight)."""
    weight = balanced(y, sources)
    if extra is None or extra[2] <= 0:
        return LogisticRegression(C=c, max_iter=5000).fit(X, y, sample_weight=weight)
    EX, ey, w = extra
    return LogisticRegression(C=c, max_iter=5000).fit(
        np.vstack([X, EX]),
        np.concatenate([y, ey]),
        sample_weight=np.concatenate([weight, np.full(len(ey), w)]),
    )


def part(sources: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    """``sources`` of these rows (None stays None: no balancing)."""
    return None if sources is None else sources[rows]


def choose_c(
    X: np.ndarray,
    y: np.ndarray,
    g: np.ndarray,
    extra: Extra | None = None,
    sources: np.ndarray | None = None,
    seed: int = SEED,
) -> float:
    """The ``C`` of ``CS`` with the best grouped-CV AUROC on these rows."""
    best, best_auc = CS[0], -1.0
    splits = list(StratifiedGroupKFold(FOLDS, shuffle=True, random_state=seed).split(X, y, g))
    for c in CS:
        oof = np.zeros(len(y))
        for train, test in splits:
            model = fit(X[train], y[train], c, extra, part(sources, train))
            oof[test] = model.predict_proba(X[test])[:, 1]
        auc = float(roc_auc_score(y, oof))
        if auc > best_auc:
            best, best_auc = c, auc
    return best


def out_of_fold(
    X: np.ndarray,
    y: np.ndarray,
    g: np.ndarray,
    pieces: tuple[np.ndarray, np.ndarray],
    extra: Extra | None = None,
    sources: np.ndarray | None = None,
    seed: int = SEED,
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Nested grouped CV: out-of-fold probabilities of each whole text and of each row as the
    evaluator scores it (``pieces``: their features and owner rows), and each fold's ``C``;
    every fit balanced by ``sources`` when given; ``seed`` shuffles the folds."""
    P, owner = pieces
    oof = np.zeros(len(y))
    as_scored = np.zeros(len(y))
    chosen = []
    folds = StratifiedGroupKFold(FOLDS, shuffle=True, random_state=seed).split(X, y, g)
    for train, test in folds:
        c = choose_c(X[train], y[train], g[train], extra, part(sources, train), seed)
        chosen.append(c)
        model = fit(X[train], y[train], c, extra, part(sources, train))
        oof[test] = model.predict_proba(X[test])[:, 1]
        mine = np.isin(owner, test)
        fold = highest(model.predict_proba(P[mine])[:, 1], owner[mine], len(y))
        as_scored[test] = fold[test]
    return oof, as_scored, chosen


def leave_one_source_out(
    X: np.ndarray,
    y: np.ndarray,
    sources: np.ndarray,
    c: float,
    pieces: tuple[np.ndarray, np.ndarray],
    extra: Extra | None = None,
    balance: bool = BALANCE,
) -> np.ndarray:
    """Each source's rows, as the evaluator scores them, by a head fitted on the other sources
    (balanced by source and label with ``balance``)."""
    P, owner = pieces
    scores = np.zeros(len(y))
    for source in sorted(set(sources.tolist())):
        test = sources == source
        mine = test[owner]
        model = fit(X[~test], y[~test], c, extra, sources[~test] if balance else None)
        scores[test] = highest(model.predict_proba(P[mine])[:, 1], owner[mine], len(y))[test]
    return scores


def metrics(y: np.ndarray, s: np.ndarray, sources: np.ndarray) -> dict[str, dict[str, float]]:
    """AUROC and F1 (flag = score above the threshold), overall and per source."""
    out = {}
    for name in ["all", *sorted(set(sources.tolist()))]:
        m = np.ones(len(y), dtype=bool) if name == "all" else sources == name
        row = {"n": int(m.sum()), "auroc": round(float(roc_auc_score(y[m], s[m])), 3)}
        for t in THRESHOLDS:
            row[f"f1@{t}"] = round(float(f1_score(y[m], s[m] > t, zero_division=0)), 3)
        out[name] = row
    return out


def extra_rows(data_dir: Path, weight: float) -> Extra | None:
    """The training-only rows' features and labels at ``weight`` (None at weight 0)."""
    if weight <= 0:
        return None
    rows, digest = load_extra(data_dir)
    EX = features([row["text"] for row in rows], digest, "toxicity_extra_features")
    return EX, np.array([int(row["label"]) for row in rows]), weight


def at_false_alarms(
    y: np.ndarray, s: np.ndarray, sources: np.ndarray, budget: float = FALSE_ALARMS
) -> float:
    """The lowest threshold at which no source fails more than ``budget`` of its non-toxic
    rows (a row is flagged when its score is above the threshold)."""
    cut = 0.0
    for source in set(sources.tolist()):
        clean = np.sort(s[(sources == source) & (y == 0)])
        allowed = int(np.floor(budget * len(clean)))  # rows that may stay above the cut
        cut = max(cut, float(clean[len(clean) - allowed - 1]) if allowed < len(clean) else 0.0)
    return cut


def operating(
    y: np.ndarray, s: np.ndarray, sources: np.ndarray, threshold: float
) -> dict[str, dict[str, float]]:
    """False alarms (non-toxic flagged) and detection (toxic caught), overall and per source,
    flagged when the score is above ``threshold``."""
    out = {}
    for name in ["all", *sorted(set(sources.tolist()))]:
        m = np.ones(len(y), dtype=bool) if name == "all" else sources == name
        flagged = s[m] > threshold
        out[name] = {
            "false_alarms": round(float(flagged[y[m] == 0].mean()), 3),
            "detection": round(float(flagged[y[m] == 1].mean()), 3),
        }
    return out


def rule_points(y: np.ndarray, s: np.ndarray, sources: np.ndarray) -> dict[str, float]:
    """The operating points ``POINT_RULES`` gives for scores ``s`` (flagged above)."""
    grid = np.round(np.arange(0.01, 1.0, 0.01), 2)
    out = {}
    for name, (share, per_source) in POINT_RULES.items():
        names = sorted(set(sources.tolist())) if per_source else [None]
        for t in grid:
            rates = [
                float((s[(y == 0) & ((sources == n) if n else True)] > t).mean()) for n in names
            ]
            if max(rates) <= share:
                out[name] = float(t)
                break
    return out


def pooled_points(
    data_dir: Path, balance: bool = BALANCE, known: dict[int, dict[str, Any]] | None = None
) -> dict[str, float]:
    """``rule_points`` on the out-of-fold scores of every ``POINT_SEEDS`` fold assignment
    (``known``: ``evaluate`` results already at hand, by fold seed, not run again)."""
    y, scores, sources = [], [], []
    for seed in POINT_SEEDS:
        result = (known or {}).get(seed) or evaluate(
            data_dir, full=False, balance=balance, seed=seed
        )
        y.append(result["y"])
        scores.append(result["oof"])
        sources.append(np.array([str(row["source"]) for row in result["rows"]]))
    return rule_points(np.concatenate(y), np.concatenate(scores), np.concatenate(sources))


def evaluate(
    data_dir: Path,
    weight: float = EXTRA_WEIGHT,
    full: bool = True,
    balance: bool = BALANCE,
    seed: int = SEED,
) -> dict[str, Any]:
    """Features, lexical baseline, out-of-fold (and with ``full`` leave-one-source-out) scores
    and metrics, the training-only rows added at ``weight``, every fit balanced by source and
    label with ``balance``, the folds shuffled by ``seed``."""
    rows, digest = load(data_dir)
    X = features([row["text"] for row in rows], digest)
    texts, owner = scored_pieces(rows)
    pieces = (features(texts, digest, "toxicity_piece_features"), owner)
    y = np.array([int(row["label"]) for row in rows])
    sources = np.array([str(row["source"]) for row in rows])
    g = groups(rows)
    extra = extra_rows(data_dir, weight)
    cells = sources if balance else None
    lexical = 1.0 / (1.0 + np.exp(-X[:, -1]))
    whole, oof, chosen = out_of_fold(X, y, g, pieces, extra, cells, seed)
    c = choose_c(X, y, g, extra, cells, seed)
    cut = at_false_alarms(y, oof, sources)
    result: dict[str, Any] = {
        "rows": rows,
        "X": X,
        "y": y,
        "extra": extra,
        "weight": weight,
        "balance": cells,
        "C": c,
        "fold_C": chosen,
        "oof": oof,
        "cut": cut,
        "operating": {
            **{f"{t:g}": operating(y, oof, sources, t) for t in OPERATING},
            f"{cut:.4f} (at most {FALSE_ALARMS:.0%} per source)": operating(y, oof, sources, cut),
        },
        "metrics": {
            "lexical (alt-profanity-check)": metrics(y, lexical, sources),
            "head, out-of-fold": metrics(y, oof, sources),
            "head, out-of-fold, whole text only": metrics(y, whole, sources),
        },
    }
    if full:
        result["metrics"]["head, leave-one-source-out"] = metrics(
            y, leave_one_source_out(X, y, sources, c, pieces, extra, balance), sources
        )
    return result


def choose_extra(data_dir: Path) -> dict[str, Any]:
    """Out of fold on the tuning part, for each of ``EXTRA_WEIGHTS``: AUROC per source, the
    threshold keeping every source's false alarms at ``FALSE_ALARMS`` and its detection."""
    out = {}
    for weight in EXTRA_WEIGHTS:
        result = evaluate(data_dir, weight, full=False)
        at = result["operating"][f"{result['cut']:.4f} (at most {FALSE_ALARMS:.0%} per source)"]
        out[f"{weight:g}"] = {
            "auroc": {k: v["auroc"] for k, v in result["metrics"]["head, out-of-fold"].items()},
            "cut": round(result["cut"], 4),
            "at_cut": at,
            "weakest_detection": min(v["detection"] for k, v in at.items() if k != "all"),
        }
        print(f"extra weight {weight:g}:", json.dumps(out[f"{weight:g}"]), flush=True)
    return out


def locked(data_dir: Path, result: dict[str, Any]) -> dict[str, Any]:
    """The locked part scored once by the head fitted on the tuning part (and the training-only
    rows), as the evaluator scores a text: AUROC per source and the rates at each threshold."""
    model = fit(result["X"], result["y"], result["C"], result["extra"], result["balance"])
    rows = load_locked(data_dir)
    texts, owner = scored_pieces(rows)
    scores = highest(model.predict_proba(head_features(texts))[:, 1], owner, len(rows))
    y = np.array([int(row["label"]) for row in rows])
    sources = np.array([str(row["source"]) for row in rows])
    return {
        "auroc": {k: v["auroc"] for k, v in metrics(y, scores, sources).items()},
        "operating": {
            **{f"{t:g}": operating(y, scores, sources, t) for t in OPERATING},
            f"{result['cut']:.4f} (out-of-fold cut)": operating(y, scores, sources, result["cut"]),
        },
    }


def table(result: dict[str, Any]) -> str:
    """The metrics as a plain-text table."""
    lines = [f"{'detector / source':<58}{'n':>6}{'AUROC':>7}{'F1@.75':>8}{'F1@.5':>7}"]
    for name, per in result["metrics"].items():
        lines.append(name)
        for source, m in per.items():
            lines.append(
                f"  {source:<56}{m['n']:>6}{m['auroc']:>7.3f}{m['f1@0.75']:>8.3f}"
                f"{m['f1@0.5']:>7.3f}"
            )
    lines.append(f"C chosen: {result['C']} (outer folds: {result['fold_C']})")
    lines.append(f"training-only rows' weight: {result['weight']:g}")
    lines.append(f"balanced by source and label: {result['balance'] is not None}")
    lines.append("out of fold, false alarms / detection at each threshold:")
    for t, per in result["operating"].items():
        lines.append(f"  {t}: {json.dumps(per)}")
    return "\n".join(lines)


def write(result: dict[str, Any], path: Path = HEAD_WEIGHTS) -> None:
    """Fit on every row with the chosen C and write the weights file."""
    model = fit(result["X"], result["y"], result["C"], result["extra"], result["balance"])
    coef = [round(float(w), 5) for w in model.coef_[0]]
    data = {
        "name": NAME,
        "features": "mean MiniLM sentence vector (L2-normalised, 384) + logit of lexical p",
        "coef": coef,
        "intercept": round(float(model.intercept_[0]), 5),
        "info": {
            "embedding_model": head_embedder_id(),
            "lexical_model": PROFANITY_MODEL,
            "training_data": f"{FILE}, tuning part ({len(result['y'])} rows; MIT)"
            + (
                f" + {EXTRA_FILE} ({len(result['extra'][1])} rows at weight {result['weight']:g})"
                if result["extra"] is not None
                else ""
            ),
            "balanced": "every (source, label) cell weighs the same"
            if result["balance"] is not None
            else "no",
            "C": result["C"],
            "trained_by": "training/train_toxicity.py --write",
            "cross_validated": result["metrics"]["head, out-of-fold"]["all"],
        },
    }
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command line: report the validation, and with ``--write`` write the weights."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="folder of the data (default: ../shared/data)")
    parser.add_argument("--write", action="store_true", help="write the weights file")
    parser.add_argument(
        "--choose-extra", action="store_true", help="out-of-fold figures per extra weight"
    )
    parser.add_argument(
        "--locked", action="store_true", help="score the locked part once (never to choose)"
    )
    parser.add_argument(
        "--extra-weight",
        type=float,
        help=f"measure the training-only rows at this weight (default {EXTRA_WEIGHT:g}; "
        "not with --write)",
    )
    parser.add_argument(
        "--unbalanced",
        action="store_true",
        help="measure the head fitted without balancing sources and labels (not with --write)",
    )
    parser.add_argument(
        "--fold-seed",
        type=int,
        help=f"shuffle the cross-validation folds with this seed (default {SEED}; "
        "not with --write)",
    )
    args = parser.parse_args(argv)
    if args.write and (
        args.extra_weight is not None or args.unbalanced or args.fold_seed is not None
    ):
        parser.error(
            "--write fits the shipped recipe; --extra-weight, --unbalanced and "
            "--fold-seed only measure"
        )
    started = time.perf_counter()
    folder = data_dir(args.data_dir)
    RESULTS.mkdir(exist_ok=True)
    if args.choose_extra:
        chosen = choose_extra(folder)
        (RESULTS / "toxicity_choose_extra.json").write_text(json.dumps(chosen, indent=1) + "\n")
        return 0
    seed = SEED if args.fold_seed is None else args.fold_seed
    result = evaluate(
        folder,
        EXTRA_WEIGHT if args.extra_weight is None else args.extra_weight,
        balance=not args.unbalanced,
        seed=seed,
    )
    print(table(result))
    same = args.extra_weight is None  # the points' runs use no training-only rows either
    points = pooled_points(folder, not args.unbalanced, {seed: result} if same else None)
    print(f"operating points by the rule, {len(POINT_SEEDS)} fold assignments pooled:", points)
    if args.locked:
        scored = locked(folder, result)
        print("locked part:", json.dumps(scored, indent=1))
        name = ("" if args.extra_weight is None else f"_extra{args.extra_weight:g}") + (
            "_unbalanced" if args.unbalanced else ""
        )
        (RESULTS / f"toxicity_locked{name}.json").write_text(json.dumps(scored, indent=1) + "\n")
    if args.write:
        write(result)
        print(f"wrote {HEAD_WEIGHTS} ({HEAD_WEIGHTS.stat().st_size} bytes)")
    print(f"{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
