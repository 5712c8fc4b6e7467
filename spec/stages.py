"""The training stages of one DLRM iteration, in the order one GPU runs them."""

from __future__ import annotations

import enum


class Stage(enum.Enum):
    INPUT_A2A = "input_a2a"
    EMB_FWD = "emb_fwd"
    EMB_A2A_FWD = "emb_a2a_fwd"
    BOTTOM_MLP_FWD = "bottom_mlp_fwd"
    INTERACTION_FWD = "interaction_fwd"
    TOP_MLP_FWD = "top_mlp_fwd"
    TOP_MLP_BWD = "top_mlp_bwd"
    INTERACTION_BWD = "interaction_bwd"
    BOTTOM_MLP_BWD = "bottom_mlp_bwd"
    EMB_A2A_BWD = "emb_a2a_bwd"
    EMB_BWD = "emb_bwd"
    GRAD_ALLREDUCE = "grad_allreduce"
    OPTIMIZER = "optimizer"

    @property
    def is_collective(self) -> bool:
        return self in COLLECTIVES


STAGE_ORDER: tuple[Stage, ...] = tuple(Stage)
COLLECTIVES = frozenset({Stage.INPUT_A2A, Stage.EMB_A2A_FWD, Stage.EMB_A2A_BWD,
                         Stage.GRAD_ALLREDUCE})


def stages_for(gpu_count: int) -> tuple[Stage, ...]:
    """The stages an iteration has: collectives only with more than one GPU."""
    return tuple(s for s in STAGE_ORDER if gpu_count > 1 or not s.is_collective)
