"""A machine profile applied for the simulator: the profile's ceilings and host costs
(spec.machine.MachineProfile.apply), and per training stage the machine's measured time
over what the cost model predicts for the same stage, from the stages the profile timed.
The cost model's stage times were fitted on another machine; the scales carry what this
machine's GPU, clocks and libraries make of each stage to every model and batch. The
plan kernels the profile timed get the same ratio, each for itself: the kernel at other
row counts, never another kernel. A kernel the profile also timed in its plan's eager
step, released at its stage, takes its co-run rates there from that step."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from corun.costmodel.workload import kernel_work, stage_work
from corun.spec import Hardware, SpecError, Stage, model_preset, pipeline_preset
from corun.spec.hardware import KernelScale, ReleaseTiming, StageScale
from corun.spec.machine import MachineProfile
from corun.spec.sharding import shard_tables


def on_machine(hw: Hardware, profile: MachineProfile, cost_model=None,
               name: str = "") -> Hardware:
    """`hw` as the machine of `profile` (same GPU kind, any GPU count), named `name`: its
    measured ceilings and host, and the stage and kernel scales (Hardware.stage_scale,
    kernel_scale) its timings give against `cost_model` (default: the learned model for
    that machine)."""
    applied = profile.apply(hw, name)
    if not profile.stages and not profile.kernels:
        return applied
    one = replace(applied, gpu_count=1, host_cpu_cores=max(1, applied.host_cpu_cores
                                                            // applied.gpu_count))
    if cost_model is None:
        from corun.costmodel.learned import cost_model_for

        cost_model = cost_model_for(one)
    ratios: dict[str, list[StageScale]] = defaultdict(list)
    works: dict[tuple[str, int], dict] = {}
    for t in profile.stages:
        key = (t.model, t.batch_per_gpu)
        if key not in works:
            try:
                model = replace(model_preset(t.model), batch_per_gpu=t.batch_per_gpu)
            except SpecError:
                continue  # a model this corun has no preset of: its timing is not used
            works[key] = stage_work(model, one, shard_tables(model, one), 0)
        work = works[key].get(Stage(t.stage))
        if work is None:
            continue
        predicted = cost_model.stage_ms(replace(work, trains_on=t.pipeline), one)
        ratios[t.stage].append(StageScale(t.model, t.batch_per_gpu, t.ms / predicted))
    kernels: dict[str, list[KernelScale]] = defaultdict(list)
    released: dict[str, list[ReleaseTiming]] = defaultdict(list)
    for k in profile.kernels:
        try:
            pipeline = pipeline_preset(k.pipeline)
            kw = kernel_work(pipeline, "timed", k.nodes, k.rows, k.blocks,
                             k.threads_per_block, k.warp_rows, k.fixed_offsets, k.source_first)
        except (SpecError, KeyError):
            continue  # a pipeline (or node) this corun has no preset of: not used
        kernels[kw.key].append(KernelScale(k.rows, k.ms / cost_model.kernel_ms(kw, one)))
        if k.release is not None:
            released[kw.key].append(k.release)
    return replace(applied, stage_scale={s: tuple(v) for s, v in sorted(ratios.items())},
                   kernel_scale={k: tuple(v) for k, v in sorted(kernels.items())},
                   release_steps={k: tuple(v) for k, v in sorted(released.items())})
