"""Plans and predictions for the multi-GPU runs (issue 8: 4 GPUs; 2 where only two are
lent), next to `corun plan --gpus N`'s output in bench/plans/x<N>/<pipeline>-b<batch>/:
corun's plan with every self-contained sparse feature moved to its table's owner
(plan-owner.json), and predictions for it and for ideal with PGAS-style embedding puts
instead of the embedding all-to-alls.

    python bench/plans/make_multi.py N   (bash bench/plans/make.sh runs it for 2 and 4)
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

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ("2", "4"):
        print("usage: python bench/plans/make_multi.py 2|4 (GPUs)", file=sys.stderr)
        return 2
    gpus = int(args[0])
    for pipe in ("kaggle", "terabyte"):
        for batch in (4096, 8192):
            d = HERE / f"x{gpus}" / f"{pipe}-b{batch}"
            model = replace(spec.model_preset(spec.DEFAULT_MODEL_FOR[pipe]),
                            batch_per_gpu=batch)
            base = Scenario(spec.hardware_preset("h200", gpus), model, spec.pipeline_preset(pipe),
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
