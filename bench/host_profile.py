"""Where the launching thread's time goes, function by function: the executor's run loop
(Executor._run_pipelined, or _run_replay for ideal: the timed steps, their warm-up and
the first batches' set-up) of bench/execute_gpu.py's cases under cProfile (Python's
deterministic profiler; it adds about a microsecond to every call, so the small calls
read high), each case's stats written as text, sorted by own time and by cumulative
time. bench/host_breakdown.py times a fixed list of executor calls with less overhead;
this finds what is inside them.

On the H200:  python bench/host_profile.py --out $OUT -- --matrix plans --only kaggle \
                  --batches 4096 --strategies ideal,corun --iterations 200
Locally:      python bench/host_profile.py --out /tmp/x -- --matrix plans --only kaggle \
                  --batches 4096 --strategies corun --dry-run
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend import executor  # noqa: E402
from bench import execute_gpu  # noqa: E402
from bench.host_breakdown import wrapper_args  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

TOP = 45
"""Functions listed per sort."""


def main(argv: list[str] | None = None) -> int:
    out, rest = wrapper_args(__doc__, argv)
    current: dict[str, str] = {}
    run_case = execute_gpu.run_case

    def named(pipe_name, batch, label, a, *more):
        current["name"] = f"{pipe_name}_b{batch}_{label}"
        current["steps"] = a.iterations + a.warmup
        return run_case(pipe_name, batch, label, a, *more)

    def profiled(original):
        def run(self, total):
            prof = cProfile.Profile()
            prof.enable()
            try:
                return original(self, total)
            finally:
                prof.disable()
                text = io.StringIO()
                text.write(f"# {current['name']}: {total} steps, cProfile\n")
                for key in ("tottime", "cumulative"):
                    text.write(f"\n## by {key}\n")
                    pstats.Stats(prof, stream=text).sort_stats(key).print_stats(TOP)
                write_atomic(out / f"profile_{current['name']}.txt", text.getvalue())
        return run

    execute_gpu.run_case = named
    for name in ("_run_pipelined", "_run_replay"):
        setattr(executor.Executor, name, profiled(getattr(executor.Executor, name)))
    return execute_gpu.main(rest + ["--out", str(out / "execute")])


if __name__ == "__main__":
    raise SystemExit(main())
