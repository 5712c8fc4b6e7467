"""A GPU-sized preset cut small for the CPU and written as the spec files the CLI reads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from corun.spec.serde import save

from corun import spec
from corun.workload import shrink_tables


def write_small_kaggle(folder: Path, rows: int, table_rows: int,
                       pipeline_file: str = "pipeline.json") -> tuple[spec.Model, spec.Pipeline]:
    """criteo-kaggle at batch `rows` with tables of `table_rows` rows, and its kaggle
    pipeline, saved as folder/model.json and folder/<pipeline_file>."""
    return write_small(folder, "criteo-kaggle", "kaggle", rows, table_rows, pipeline_file)


def write_small(folder: Path, model_name: str, pipeline_name: str, rows: int, table_rows: int,
                pipeline_file: str = "pipeline.json") -> tuple[spec.Model, spec.Pipeline]:
    """A model preset at batch `rows` with tables of `table_rows` rows, and a pipeline
    preset, saved as folder/model.json and folder/<pipeline_file>."""
    model, pipe = shrink_tables(replace(spec.model_preset(model_name), batch_per_gpu=rows),
                                spec.pipeline_preset(pipeline_name), table_rows)
    save(model, folder / "model.json")
    save(pipe, folder / pipeline_file)
    return model, pipe
