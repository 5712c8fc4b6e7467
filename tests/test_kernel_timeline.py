"""bench/kernel_timeline.py: cutting a profiler trace's training stream into steps."""

import gzip
import json

from bench.kernel_timeline import kernels, table, training_steps


def trace(tmp_path, name, slow=1.0, steps=12):
    """A trace of `steps` steps of 4 training kernels (stream 7; a 50 us idle gap
    before "a", 2 us between the others; "c" takes `slow` x 10 us) beside one
    preprocessing kernel a step on stream 13."""
    events, t = [], 0.0
    for _ in range(steps):
        t += 50.0
        for k, dur in (("a", 10.0), ("b", 5.0), ("c", 10.0 * slow), ("d", 3.0)):
            events.append({"cat": "kernel", "name": k, "ts": t, "dur": dur,
                           "args": {"stream": 7}})
            if k == "b":
                events.append({"cat": "kernel", "name": "pre", "ts": t, "dur": 40.0,
                               "args": {"stream": 13}})
            t += dur + 2.0
    events.append({"cat": "cpu_op", "name": "x", "ts": 0.0, "dur": 1.0, "args": {}})
    path = tmp_path / f"{name}.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


def test_steps_start_after_the_longest_gap_and_line_up(tmp_path):
    steps = training_steps(kernels(trace(tmp_path, "ideal")), 5)
    assert len(steps) == 5
    assert all([k["name"] for k in st] == ["a", "b", "c", "d"] for st in steps)
    like = [k["name"] for k in steps[0]]
    slow = training_steps(kernels(trace(tmp_path, "corun", slow=3.0)), 5, like)
    assert [k["name"] for k in slow[-1]] == like
    text = table({"ideal": steps, "corun": slow}, "cmd")
    assert "| 2 | `c` | 10.0 | 2.0 | 30.0 | 2.0 |" in text
    assert "ideal: kernels 28, gaps 6; corun: kernels 48, gaps 6" in text
