"""The host launches of one eager training step, by training stage."""

from __future__ import annotations

from dataclasses import dataclass, field

from corun.spec.errors import require, require_int_range
from corun.spec.stages import Stage


@dataclass(frozen=True)
class StepLaunches:
    """What the host thread launches in one eager step of `model`, by stage: PyTorch
    operators (each about one kernel launch on a GPU) and the trainer's own kernels
    launched through Numba (the bag forward, the fused embedding update), which cost the
    host as a fused preprocessing kernel's launch does (backend/launch.py)."""

    model: str
    operators: dict[str, int] = field(hash=False)
    kernels: dict[str, int] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        stages = {s.value for s in Stage}
        for name in ("operators", "kernels"):
            for stage, n in getattr(self, name).items():
                require(stage in stages, f"{name}.{stage}", stage,
                        "a training stage: " + ", ".join(sorted(stages)))
                require_int_range(f"{name}.{stage}", n, 0)
        require(sum(self.operators.values()) > 0, "operators", self.operators,
                "at least one operator a step")

    @property
    def operator_count(self) -> int:
        return sum(self.operators.values())

    @property
    def kernel_count(self) -> int:
        return sum(self.kernels.values())
