"""Run a scenario and summarise it as a Prediction."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from corun.costmodel import CostModel
from corun.costmodel.calibration import Calibration, workload_text
from corun.costmodel.learned import cost_model_for
from corun.sim.engine import RunLog, run
from corun.sim.scenario import Compiled, Scenario, compile_scenario, host_cpu_work, steady_state
from corun.sim.strategy import Strategy, StrategyKind
from corun.sim.trace import chrome_trace
from corun.spec import KernelTime, Prediction, Provenance, SpecError, StageTime
from corun.spec.findings import FindingKind, finding
from corun.spec.provenance import corun_version, git_commit
from corun.spec.serde import write_atomic


@dataclass
class SimResult:
    compiled: Compiled
    log: RunLog
    prediction: Prediction

    def chrome_trace(self) -> str:
        sc = self.compiled.scenario
        title = f"{sc.strategy.label} {sc.model.name}/{sc.pipeline.name} on " \
                f"{sc.hardware.gpu_count}x {sc.hardware.gpu.name}"
        return chrome_trace(self.log.spans, sc.hardware.gpu_count, title)

    def write_trace(self, path: str | Path) -> None:
        write_atomic(path, self.chrome_trace())


def _summarise(compiled: Compiled, log: RunLog, commit: str) -> Prediction:
    sc = compiled.scenario
    n, w = sc.hardware.gpu_count, sc.warmup
    measured = slice(w, w + sc.iterations)
    # An iteration ends when its slowest GPU ends (collectives keep them together).
    starts = np.array(log.iteration_start_ms)[:, measured].min(axis=0)
    ends = np.array(log.iteration_end_ms)[:, measured].max(axis=0)
    it_ms = float(np.median(ends - starts))
    stage_arr = np.array(log.stage_ms)[:, measured, :]  # gpu, iter, stage
    stages = []
    for pos, s in enumerate(compiled.gpus[0].stages):
        alone = float(np.mean([g.stage_ms[pos] + g.comm_ms[pos] + g.pre_barrier_ms[pos]
                               for g in compiled.gpus]))
        stages.append(StageTime(s.value, float(np.median(stage_arr[:, :, pos].mean(axis=0))),
                                alone))
    kernels = []
    kernel_arr = np.array(log.kernel_ms, dtype=float)
    for g, tables in enumerate(compiled.gpus):
        for i, k in enumerate(tables.kernels):
            stage = "before" if k.release_pos < 0 else tables.stages[k.release_pos].value
            name = k.name if n == 1 else f"gpu{g}/{k.name}"
            kernels.append(KernelTime(name, float(np.median(kernel_arr[g, measured, i])),
                                      k.alone_ms, stage))
    busy = np.array(log.busy_ms)[:, measured].sum(axis=1)
    span = float(ends[-1] - starts[0])
    util = tuple(float(b / span) if span > 0 else 0.0 for b in busy)
    prov = Provenance(corun_version(), commit, compiled.cost_model, sc.hardware.gpu.name,
                      datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      sc.seed)
    global_batch = sc.model.batch_per_gpu * n
    # Throughput from the whole measured span, not the median iteration: with bursty
    # supply (CPU workers that cannot keep up) a few stalls decide the rate.
    mean_ms = span / sc.iterations if span > 0 else it_ms
    return Prediction(
        strategy=sc.strategy.label, model=sc.model.name, pipeline=sc.pipeline.name,
        hardware=sc.hardware.gpu.name, gpu_count=n, batch_per_gpu=sc.model.batch_per_gpu,
        iterations=sc.iterations, iteration_time_ms=it_ms,
        throughput_samples_per_s=global_batch / mean_ms * 1e3,
        stall_ms_per_iteration=float(np.array(log.stall_ms)[:, measured].mean()),
        stages=tuple(stages), kernels=tuple(kernels), gpu_utilisation=util, provenance=prov,
        findings=tuple(compiled.findings))


def simulate(scenario: Scenario, cost_model: CostModel | None = None,
             commit: str | None = None) -> SimResult:
    """Compile the scenario with `cost_model` (by default the learned one where the GPU
    kind has a fitted model, else the analytic one), run it, summarise."""
    compiled = compile_scenario(scenario, cost_model or cost_model_for(scenario.hardware))
    log = run(compiled)
    return SimResult(compiled, log, _summarise(compiled, log, commit or git_commit()))


SETTLE_WARMUP = 24
"""Warm-up iterations of the second run `simulate_steady` makes where a plan's first run
had not settled. A graphed heavy-lean b16384 plan (the whole pipeline in
2112 blocks at emb_fwd, two ahead) ran at 3.370 ms for 20 iterations while its kernel
slid against the step (2.45 down to 2.12 ms of wall time), then settled at 3.692 ms; the
planner's six iterations had ranked it first, tied with one that stays at 3.370."""


def settled(log: RunLog, warmup: int) -> bool:
    """Whether every measured iteration repeats the one before it on every GPU: the same
    duration and the same kernel times (the last iteration's kernels, drained alone at
    the run's end, left out). Meaningful for runs without jitter only."""
    durations = np.array(log.iteration_end_ms) - np.array(log.iteration_start_ms)
    kernels = np.array(log.kernel_ms, dtype=float)[:, warmup:-1]
    return bool(np.ptp(durations[:, warmup:], axis=1).max(initial=0.0) < 1e-6
                and (kernels.size == 0 or np.ptp(kernels, axis=1).max() < 1e-6))


def simulate_steady(scenario: Scenario, cost_model: CostModel | None = None,
                    commit: str | None = None) -> SimResult:
    """`simulate` the scenario as long as its steady state needs: host CPU work for
    `steady_state`'s minimum, and a plan whose kernels are still sliding against the step
    over the measured iterations (a deterministic run that has not `settled`) once more
    after SETTLE_WARMUP iterations of warm-up, the prediction noting it."""
    sc = steady_state(scenario)
    result = simulate(sc, cost_model, commit)
    if host_cpu_work(sc.strategy) or sc.jitter_cv > 0 or sc.warmup >= SETTLE_WARMUP \
            or settled(result.log, sc.warmup):
        return result
    again = simulate(replace(sc, warmup=SETTLE_WARMUP), cost_model, commit)
    note = finding(FindingKind.NOT_SETTLED, warmup=sc.warmup, settle_warmup=SETTLE_WARMUP,
                   first_ms=result.prediction.iteration_time_ms)
    p = again.prediction
    return replace(again, prediction=replace(p, findings=p.findings + (note,)))


def calibrate(scenario: Scenario, calibration: Calibration,
              cost_model: CostModel | None = None) -> Scenario:
    """`scenario` with every duration scaled so that its ideal predicts the ideal
    measured on the machine (costmodel/calibration.py says why one factor)."""

    m, gpus = scenario.model, scenario.hardware.gpu_count
    if not calibration.applies_to(m.name, m.batch_per_gpu, gpus, m.cuda_graphs):
        raise SpecError("--calibration", f"{calibration.workload()} ({calibration.source})",
                        "an ideal measured for " + workload_text(
                            m.name, m.batch_per_gpu, gpus, m.cuda_graphs))
    ideal = replace(scenario, strategy=Strategy(StrategyKind.IDEAL), time_scale=1.0,
                    jitter_cv=0.0)
    predicted = simulate(ideal, cost_model).prediction.mean_iteration_ms
    return replace(scenario, time_scale=calibration.ideal_ms / predicted)
