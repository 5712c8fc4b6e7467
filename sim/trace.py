"""Timeline events and their Chrome-trace JSON (opens in Perfetto / chrome://tracing)."""

from __future__ import annotations

import json
from dataclasses import dataclass

TRAINING, PREPROCESS, COPY, WAIT, HOST = 0, 1, 2, 3, 4
STREAM_NAMES = {TRAINING: "training stream", PREPROCESS: "preprocessing stream",
                COPY: "host-to-device copy", WAIT: "waiting",
                HOST: "host thread (launches, staging, assembly, check)"}


@dataclass(frozen=True)
class Span:
    """One interval on one lane. `gpu` -1 is the host (CPU workers)."""

    gpu: int
    lane: int
    name: str
    iteration: int
    start_ms: float
    end_ms: float


def chrome_trace(spans: list[Span], gpu_count: int, title: str) -> str:
    """The spans as Chrome trace JSON; GPUs are processes, streams are threads."""
    events: list[dict] = []
    host_pid = gpu_count
    for g in range(gpu_count):
        events.append({"ph": "M", "name": "process_name", "pid": g, "tid": 0,
                       "args": {"name": f"GPU {g}"}})
        for lane, lname in STREAM_NAMES.items():
            events.append({"ph": "M", "name": "thread_name", "pid": g, "tid": lane,
                           "args": {"name": lname}})
    events.append({"ph": "M", "name": "process_name", "pid": host_pid, "tid": 0,
                   "args": {"name": "host CPU workers"}})
    for s in spans:
        events.append({"ph": "X", "name": s.name, "cat": STREAM_NAMES.get(s.lane, "cpu"),
                       "pid": host_pid if s.gpu < 0 else s.gpu,
                       "tid": s.lane, "ts": round(s.start_ms * 1e3, 3),
                       "dur": round((s.end_ms - s.start_ms) * 1e3, 3),
                       "args": {"iteration": s.iteration}})
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms",
                       "otherData": {"title": title}}, indent=None)
