"""A per-calibration scaling of the faithfulness value, measured nested on the tuning part.

    cd benchmarks && ../.venv/bin/python _faith_value_scaling.py [--locked]
        [--embedding-model wordllama]

The value (``hallucination_probability``) ranks answers of every task on one scale, and the
alert rules read its hourly mean as the share of hallucinated answers. Out of fold its
calibrations are too far from 0.5: a logistic fit of the label on the value's log-odds gives
slopes of 0.4-0.75 (``_faith_value_calibration.py``). The candidate gives each calibration's
value a scaling, sigmoid(slope * log-odds + intercept), fitted on that calibration's training
answers' values out of fold (``_faith_fit.fit_scaling``: response models refitted on
``INNER_FOLDS`` folds of the training answers, from out-of-fold claim probabilities). The
scaling is monotone and the verdict threshold goes through it too, so no verdict changes; only
the pooled ranking and the values' calibration can.

Measured nested: in every outer fold the scaling is fitted on that fold's training answers
only, so the held-out answers' figures are out of sample for it too. Four fold assignments that
no earlier choice read (seeds 4000, 5000, 6000, 7000 of ``_faith_fit.group_folds``).

The rule, written before the figures were computed: ship the scaling if, over the mean of the
four fold assignments, (a) the pooled RAGTruth AUROC gains at least ``MIN_AUROC_GAIN`` and
(b) the calibration error, the mean over calibrations of |mean value - share of hallucinated
answers|, does not grow; every BA must stay the same (checked, by construction). ``--locked``
would then score the locked part once, both ways, with models fitted on the whole tuning part.

Outcome (2026-11-27, 4 min): pooled AUROC 0.770 -> 0.771 (+0.0016), calibration error
0.020 -> 0.003, every BA the same: the rule says do not ship, and the locked part was not
scored. BENCHMARKS.md, issue 22, "A scaling of the value".
"""

from __future__ import annotations

from _faith_compare import finish, over_folds, setup, show
from _faith_fit import SHIPPED_PRIOR_WEIGHTS
from train_support import BY_TASK, SHIPPED_RESPONSE

SEEDS = (4000, 5000, 6000, 7000)
MIN_AUROC_GAIN = 0.003


def main() -> None:
    run = setup(__doc__.split("\n")[0])
    data, examples, tuning = run.data, run.examples, run.tuning
    common = {"by_task": BY_TASK, "prior_weights": SHIPPED_PRIOR_WEIGHTS}
    variants = {"shipped": common, "scaled": {**common, "scale_values": True}}
    mean, per_seed = over_folds(data, examples, tuning, variants, SEEDS, SHIPPED_RESPONSE)
    show(f"tuning part, nested, mean of {len(SEEDS)} fold assignments {SEEDS}", mean)
    shipped, scaled = mean["shipped"], mean["scaled"]
    same_verdicts = all(
        abs(a[k] - b[k]) < 1e-9
        for a, b in zip(per_seed["shipped"], per_seed["scaled"], strict=True)
        for k in a
        if k.endswith(" BA")
    )
    gain = scaled["ragtruth/all AUROC"] - shipped["ragtruth/all AUROC"]
    ships = (
        gain >= MIN_AUROC_GAIN
        and scaled["calibration error"] <= shipped["calibration error"]
        and same_verdicts
    )
    print(
        f"rule: pooled AUROC gain {gain:+.4f} (>= {MIN_AUROC_GAIN}), calibration error "
        f"{shipped['calibration error']:.4f} -> {scaled['calibration error']:.4f}, verdicts "
        f"{'the same' if same_verdicts else 'CHANGED'}: {'ship' if ships else 'do not ship'}"
    )
    result: dict[str, object] = {"seeds": SEEDS, "tuning": mean, "ships": ships}
    finish(result, "faith_value_scaling", run, variants, SHIPPED_RESPONSE)


if __name__ == "__main__":
    main()
