"""The preprocessing stream confined to some SMs of one GPU (a CUDA green context) while
training, on an ordinary stream, keeps every SM (Plan.preprocess_sm_cap: backend/
streams.py uses only the split's `pre` stream), so that a kernel ready between two
training kernels cannot take the SMs the next one needs. On the H200 it took eager
heavy-rehash b32768's choice from 74-76% of gpu-sequential's gap to 111%. (Splitting
the SMs both ways lost to sharing them: the two streams meet in the memory system, not
on the SMs.)

Green contexts share the primary context's memory and modules: PyTorch's and Numba's
kernels run on their streams unchanged, on the SMs of the stream's context. The driver
rounds a requested count up to its granularity (8 SMs on Hopper); `SmSplit` reports the
counts it got."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SmSplit:
    """Two streams on disjoint SMs of one GPU, and how many SMs each got."""

    train: torch.cuda.ExternalStream
    pre: torch.cuda.ExternalStream
    train_sms: int
    pre_sms: int
    keep: tuple
    """The green contexts and raw streams, kept alive as long as the streams are used."""
    pre_side: torch.cuda.ExternalStream
    """A second stream of `pre`'s green context, to capture work for `pre` on
    (backend/batch_graphs.py): a kernel captured on a green context's stream keeps to
    that context's SMs when its graph is replayed."""


GREEN_CONTEXT_DRIVER = 12040
"""The CUDA driver version (12.4) that brought green contexts (cuGreenCtxCreate)."""


def green_contexts_supported() -> bool:
    """Whether this machine's CUDA driver and bindings can make green contexts: False
    without a driver, without cuda-bindings, or with a driver older than 12.4."""
    try:
        from cuda.bindings import driver as drv

        err, version = drv.cuDriverGetVersion()
        return (err == drv.CUresult.CUDA_SUCCESS and version >= GREEN_CONTEXT_DRIVER
                and hasattr(drv, "cuGreenCtxCreate"))
    except Exception:  # noqa: BLE001 - no driver library, no bindings: not supported
        return False


def runnable_cap(cap: int, supported: bool, sm_count: int) -> tuple[int, str]:
    """A plan's preprocessing SM cap as a GPU of `sm_count` SMs can run it, and why not
    where it cannot: 0 (every SM) where the driver makes no green contexts (`supported`)
    or the cap leaves training fewer than 8 SMs. `corun plan` caps a plan for the GPU it
    plans for; the plan may run on another."""
    if not cap:
        return 0, ""
    if not supported:
        return 0, ("this machine's CUDA driver makes no green contexts (12.4 or later, with "
                   "cuda-bindings)")
    if cap > sm_count - 8:
        return 0, f"this GPU has {sm_count} SMs (training keeps at least 8)"
    return cap, ""


def _ok(result, call: str):
    err, *rest = result
    from cuda.bindings import driver as drv

    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{call} failed: {err}")
    return rest[0] if len(rest) == 1 else tuple(rest)


def split_sms(device: torch.device, pre_sms: int, training_high: bool) -> SmSplit:
    """Give the preprocessing stream `pre_sms` SMs (rounded up by the driver) and the
    training stream the rest; the training stream at the higher priority when
    `training_high` (it then matters only for the work the two streams share: copies)."""
    from cuda.bindings import driver as drv

    index = device.index if device.index is not None else torch.cuda.current_device()
    torch.cuda.init()
    total = torch.cuda.get_device_properties(index).multi_processor_count
    if not 1 <= pre_sms <= total - 8:
        from corun.spec import SpecError

        raise SpecError("preprocess_sm_cap", pre_sms,
                        f"an integer in [1, {total - 8}] on this {total}-SM GPU (training "
                        "keeps at least 8)")
    torch.empty(1, device=device)  # the primary context exists before any green one
    dev = _ok(drv.cuDeviceGet(index), "cuDeviceGet")
    full = _ok(drv.cuDeviceGetDevResource(dev, drv.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM),
               "cuDeviceGetDevResource")
    groups, count, rest = _ok(drv.cuDevSmResourceSplitByCount(1, full, 0, pre_sms),
                              "cuDevSmResourceSplitByCount")
    if count != 1 or rest.sm.smCount < 1:
        raise RuntimeError(f"could not split {total} SMs into {pre_sms} and the rest")

    def green_stream(ctx, priority: int):
        raw = _ok(drv.cuGreenCtxStreamCreate(
            ctx, drv.CUstream_flags.CU_STREAM_NON_BLOCKING, priority), "cuGreenCtxStreamCreate")
        return torch.cuda.ExternalStream(int(raw), device=device), raw

    def stream(resource, priority: int):
        desc = _ok(drv.cuDevResourceGenerateDesc([resource], 1), "cuDevResourceGenerateDesc")
        ctx = _ok(drv.cuGreenCtxCreate(
            desc, dev, drv.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM),
            "cuGreenCtxCreate")
        return ctx, *green_stream(ctx, priority)

    ctx_t, train, raw_t = stream(rest, -2 if training_high else 0)  # as Streams does
    ctx_p, pre, raw_p = stream(groups[0], 0)
    side, raw_s = green_stream(ctx_p, 0)
    return SmSplit(train, pre, int(rest.sm.smCount), int(groups[0].sm.smCount),
                   ((ctx_t, raw_t), (ctx_p, raw_p, raw_s)), side)
