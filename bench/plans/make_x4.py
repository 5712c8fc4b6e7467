"""Plans and predictions for the 4-GPU run (issue 8), next to `corun plan --gpus 4`'s
output in bench/plans/x4/<pipeline>-b<batch>/: corun's plan with every self-contained
sparse feature moved to its table's owner (plan-owner.json), and predictions for it and
for ideal with PGAS-style embedding puts instead of the embedding all-to-alls.

    bash bench/plans/make.sh   (runs this last)
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import spec  # noqa: E402
from planner.variants import with_owner_mapping  # noqa: E402
from sim import EmbeddingComm, Scenario, Strategy, StrategyKind, simulate  # noqa: E402
from spec.serde import save  # noqa: E402

HERE = Path(__file__).resolve().parent / "x4"


def main() -> int:
    for pipe in ("kaggle", "terabyte"):
        for batch in (4096, 8192):
            d = HERE / f"{pipe}-b{batch}"
            model = replace(spec.model_preset(spec.DEFAULT_MODEL_FOR[pipe]),
                            batch_per_gpu=batch)
            base = Scenario(spec.hardware_preset("h200", 4), model, spec.pipeline_preset(pipe),
                            Strategy(StrategyKind.IDEAL))
            plan = with_owner_mapping(spec.load(spec.Plan, d / "plan.json"), base)
            save(plan, d / "plan-owner.json")
            owner = simulate(replace(base, strategy=Strategy(StrategyKind.PLAN, plan=plan,
                                                             name="corun-owner")))
            save(owner.prediction, d / "prediction-corun-owner.json")
            pgas = simulate(replace(base, embedding_comm=EmbeddingComm.PGAS))
            save(replace(pgas.prediction, strategy="ideal-pgas"), d / "prediction-ideal-pgas.json")
            owned = sum(1 for m in plan.feature_mapping.values() if m is spec.Mapping.OWNER)
            print(f"{pipe} b{batch}: {owned} features owner-mapped, predicted "
                  f"{owner.prediction.throughput_samples_per_s:,.0f} samples/s; ideal with "
                  f"PGAS puts {pgas.prediction.iteration_time_ms:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
