"""corun: plan, predict and run DLRM training co-running with GPU input preprocessing."""

__version__ = "0.1.0"
