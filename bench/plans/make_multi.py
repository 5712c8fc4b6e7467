"""Plans and predictions for the multi-GPU runs (issue 8: 4 GPUs; 2 where only two are
lent), next to `corun plan --gpus N`'s output in bench/plans/x<N>/<pipeline>-b<batch>/:
corun's plan with every self-contained sparse feature moved to its table's owner
(plan-owner.json), and predictions for it, for corun's best plan on the GPUs
(plan-gpu.json, planned with one host core a GPU) and for ideal with PGAS-style embedding
puts instead of the embedding all-to-alls. The owner mapping only exists for GPU kernels:
where corun's chosen plan runs everything on the host CPU, the variant is made from
plan-gpu.json, so the run measures that plan with and without the mapping.

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


def predict(base: Scenario, plan: spec.Plan, name: str, path: Path):
    """Simulate `plan` as strategy `name` and write its Prediction to `path`."""
    result = simulate(replace(base, strategy=Strategy(StrategyKind.PLAN, plan=plan, name=name)))
    save(result.prediction, path)
    return result.prediction


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
            chosen, on_gpus = (spec.load(spec.Plan, d / f) for f in ("plan.json", "plan-gpu.json"))
            source = "plan.json" if chosen.kernels else "plan-gpu.json"
            plan = with_owner_mapping(chosen if chosen.kernels else on_gpus, base)
            save(plan, d / "plan-owner.json")
            gpu = predict(base, on_gpus, "corun-gpu", d / "prediction-corun-gpu.json")
            owner = predict(base, plan, "corun-owner", d / "prediction-corun-owner.json")
            pgas = simulate(replace(base, embedding_comm=EmbeddingComm.PGAS))
            save(replace(pgas.prediction, strategy="ideal-pgas"), d / "prediction-ideal-pgas.json")
            owned = sum(1 for m in plan.feature_mapping.values() if m is spec.Mapping.OWNER)
            print(f"{pipe} b{batch}: {owned} features of {source} owner-mapped, predicted "
                  f"{owner.throughput_samples_per_s:,.0f} samples/s (plan-gpu.json "
                  f"{gpu.throughput_samples_per_s:,.0f}); ideal with "
                  f"PGAS puts {pgas.prediction.iteration_time_ms:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
