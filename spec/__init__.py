"""The shared vocabulary: validated, frozen value types. Imports nothing else of ours."""

from corun.spec.errors import SpecError
from corun.spec.hardware import (
    GPU_KINDS,
    LINKS,
    GpuKind,
    Hardware,
    Link,
    LinkKind,
    Precision,
    hardware_preset,
)
from corun.spec.measurement import Measurement, Spread
from corun.spec.model import (
    MODEL_PRESETS,
    EmbeddingForward,
    EmbeddingUpdate,
    Interaction,
    Model,
    Optimizer,
    Table,
    model_preset,
)
from corun.spec.pipeline import Column, DType, OpKind, OpNode, Pipeline, Shape, SparseOutput
from corun.spec.pipelines import DEFAULT_MODEL_FOR, PIPELINE_PRESETS, pipeline_preset
from corun.spec.plan import BEFORE_ITERATION, FusedKernel, Mapping, Plan, one_kernel_plan
from corun.spec.prediction import KernelTime, Prediction, Provenance, StageTime
from corun.spec.serde import load, save
from corun.spec.stages import STAGE_ORDER, Stage, stages_for

__all__ = [
    "BEFORE_ITERATION",
    "Column",
    "DEFAULT_MODEL_FOR",
    "DType",
    "EmbeddingForward",
    "EmbeddingUpdate",
    "FusedKernel",
    "GPU_KINDS",
    "GpuKind",
    "Hardware",
    "Interaction",
    "KernelTime",
    "LINKS",
    "Link",
    "LinkKind",
    "MODEL_PRESETS",
    "Measurement",
    "Mapping",
    "Model",
    "OpKind",
    "OpNode",
    "Optimizer",
    "PIPELINE_PRESETS",
    "Pipeline",
    "Plan",
    "Precision",
    "Prediction",
    "Provenance",
    "STAGE_ORDER",
    "Shape",
    "SparseOutput",
    "Spread",
    "SpecError",
    "Stage",
    "StageTime",
    "Table",
    "hardware_preset",
    "load",
    "model_preset",
    "one_kernel_plan",
    "pipeline_preset",
    "save",
    "stages_for",
]
