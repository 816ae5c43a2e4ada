"""Boosted trees for the claim model, against the logistic regression: measured, not shipped.

    cd benchmarks && ../.venv/bin/python _faith_claim_trees.py [--locked]
        [--embedding-model wordllama]

The claim model reads ten features (``support_features.FEATURES``) through one linear score, so
it cannot learn that a claim close to a passage sentence in meaning but holding a number the
passages lack is doubtful, unless someone writes that interaction as a feature; several such
features were written and measured, none kept (BENCHMARKS.md). Shallow boosted trees learn
interactions of two or three features themselves. The candidate replaces each task's claim
model with class-balanced boosted trees (``_faith_learners.TREES``: depth 3, 150 rounds,
learning rate 0.05, at least 40 claims a leaf, L2 1.0, set before any figure and not tuned),
the response models and everything else as shipped.

How it was chosen, said as it happened:
1. Unconstrained trees. A scratch run over the four fold assignments below showed the means
   first (pooled RAGTruth AUROC 0.770 -> 0.780, Summary BA 0.658 -> 0.674); the rule was
   written after that, before the per-seed figures of the linear model were read and before
   the locked part was scored. The rule: the locked part is scored once (``--locked``) when,
   over the mean of the four fold assignments (seeds 4000-7000, which no choice before the value
   scaling read), the pooled RAGTruth AUROC gains at least ``MIN_AUROC_GAIN`` and no BA with a
   target (RAGTruth QA, Summary, pooled, HaluEval) loses more than ``MAX_BA_LOSS``; it ships
   unless the locked part shows a loss where the targets are missed (Summary's BA, the pooled
   AUROC). It passed, and the locked part gained (pooled AUROC 0.772 -> 0.794, Summary BA
   0.605 -> 0.621). Then the unit tests' hand-made examples failed: an invented price and
   brand ("It costs $349 and ships with a Contoso warranty.") was 70% unsupported for a QA
   claim and 33% for a summary claim, where the linear model says 96% and 94%, so the answer
   passed. The trees had learned from RAGTruth that a claim sharing no word with its passages
   is mostly fine ("Sure!", "Here is the summary:"), and do not extrapolate. Not shipped.
2. Monotone trees (``_faith_learners.MONOTONE``: more coverage or similarity never makes a
   claim more doubtful, a missing number or name never less), the settings otherwise the same.
   Written before their figures, with the same rule, and one more condition: the hand-made
   examples of the unit tests are flagged as before. The locked part is scored for them once
   more (its second reading for this claim model), whatever the result, and reported. The
   hand-made examples were flagged (an invented QA claim 95% unsupported, a summary one 90%),
   the tuning part gained on every slice (pooled AUROC 0.770 -> 0.782, Summary BA 0.658 ->
   0.669, QA 0.689 -> 0.716), and the locked part lost Summary's BA (0.605 -> 0.593; AUROC
   0.673 -> 0.669), with the pooled AUROC 0.772 -> 0.775 and HaluEval 0.943 -> 0.929, under
   its 0.93 target. By the rule: not shipped.

Nothing else was tried on this family after that: the free trees did well on the locked part,
and a variant chosen now (the free trees with the linear model's confident claims as a veto,
say) would be chosen with that reading in mind. ``--locked`` prints all three once more; it
chooses nothing. A later stop tried one more variant, and said why: the trees taught with
foreign claims (``_faith_foreign_claims.py``, not shipped either).
"""

from __future__ import annotations

from _faith_compare import finish, over_folds, setup, show
from _faith_fit import SHIPPED_PRIOR_WEIGHTS
from train_support import BY_TASK, SHIPPED_RESPONSE

SEEDS = (4000, 5000, 6000, 7000)
MIN_AUROC_GAIN = 0.005
MAX_BA_LOSS = 0.01
TARGETS = ("ragtruth/QA BA", "ragtruth/Summary BA", "ragtruth/all BA", "halueval/QA BA")


def main() -> None:
    run = setup(__doc__.split("\n")[0])
    data, examples, tuning = run.data, run.examples, run.tuning
    common = {"by_task": BY_TASK, "prior_weights": SHIPPED_PRIOR_WEIGHTS}
    variants = {
        "linear": common,
        "trees": {**common, "learner": "trees"},
        "monotone": {**common, "learner": "monotone_trees"},
    }
    mean, per_seed = over_folds(data, examples, tuning, variants, SEEDS, SHIPPED_RESPONSE)
    for label, runs in per_seed.items():
        for seed, run in zip(SEEDS, runs, strict=True):
            print(
                f"  {label:<8} seed {seed}: pooled AUROC {run['ragtruth/all AUROC']:.3f}, "
                f"Summary BA {run['ragtruth/Summary BA']:.3f}"
            )
    show(f"tuning part, mean of {len(SEEDS)} fold assignments {SEEDS}", mean)
    linear = mean["linear"]
    rules = {}
    for label in ("trees", "monotone"):
        gain = mean[label]["ragtruth/all AUROC"] - linear["ragtruth/all AUROC"]
        loss = max(linear[k] - mean[label][k] for k in TARGETS)
        rules[label] = gain >= MIN_AUROC_GAIN and loss <= MAX_BA_LOSS
        print(
            f"rule, {label}: pooled AUROC gain {gain:+.4f} (>= {MIN_AUROC_GAIN}), largest BA "
            f"loss {loss:+.4f} (<= {MAX_BA_LOSS}): "
            f"{'score the locked part' if rules[label] else 'stop here'}"
        )
    result: dict[str, object] = {"seeds": SEEDS, "tuning": mean, "scores_locked": rules}
    finish(result, "faith_claim_trees", run, variants, SHIPPED_RESPONSE)


if __name__ == "__main__":
    main()
