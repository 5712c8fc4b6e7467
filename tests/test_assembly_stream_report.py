"""bench/assembly_stream_report.py: session 56's runs of the assemblies' two streams,
rendered from the committed records, each run by its throughput beside its median step."""

from bench.assembly_stream_report import AB, execute_rows, main, records
from tests.report_files import written_report


def test_a_run_counts_by_its_throughput_and_its_held_steps():
    """Eager b32768 behind the kernels: a median step of 7.019 ms, 98.2% of ideal's, but
    95 of 300 steps held, so 7.587 ms an iteration by throughput, 90.9%; 29% of the steps
    after a held one were held, against 32% of all."""
    rows = execute_rows(records(AB), [("eager-ideal", "eager-ideal"),
                                      ("eager-behind-1", "eager-ideal")])
    assert rows[2].startswith("| eager-ideal | 6.900 | 100.0% | 6.894 ")
    assert rows[3].startswith("| eager-behind-1 | 7.587 | 90.9% | 7.019 (6.72-9.20) | 95/300 | "
                              "29% |")  # of the steps after a held one, about as many
    assert rows[3].endswith("| +0.011 | +0.015 | +0.111 | +0.057 |")  # stages less ideal's


def test_the_report_is_written_whole(tmp_path):
    text = written_report(main, tmp_path / "r.md", (
        "## Summary", "## Each heavy choice both ways", "## The same with 32 hardware queues",
        "### kaggle, batch 4096 (bench/results/raw/assembly_queues_run17/"
        "matrix-queues32.json.gz)"))
    assert "| corun+behind (predicted here) | 2 | 2.281 (2.280-2.281) | 99.6%" in text
