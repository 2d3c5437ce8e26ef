"""A trivial measured test to run before another in one process (positions.sh): an add on 1,000 floats."""

import torch


def test_tiny_predecessor(throughput) -> None:
    x = torch.ones(1000)
    throughput(lambda: x.add(1), items=1, unit="calls")
