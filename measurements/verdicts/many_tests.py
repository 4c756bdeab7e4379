"""What a test costs when each call crosses to the program's process: the median time (5 runs) of a correct program
on 1,000 assert tests, and on one check() making 1,000 calls, under the local sandbox with bubblewrap. Usage: python
many_tests.py (run it at two commits to compare runners; see cost.md)."""

import statistics
import time

from codeforest.tools.sandbox import LocalSandbox
from codeforest.tools.testing import TestSuite

PROGRAM = "def add(a, b):\n    return a + b\n"
ASSERTS = TestSuite.function([f"assert add({i}, 1) == {i + 1}" for i in range(1000)], "add")
CHECK = TestSuite.function(["def check(candidate):\n" + "".join(f"    assert candidate({i}, 1) == {i + 1}\n"
                                                                  for i in range(1000)) + "check(add)"], "add")

if __name__ == "__main__":
    sandbox = LocalSandbox(isolation="bwrap")
    for name, suite in (("1000 asserts", ASSERTS), ("one check of 1000 calls", CHECK)):
        times = []
        for _ in range(5):
            started = time.perf_counter()
            assert sandbox.run(PROGRAM, suite).all_passed
            times.append(time.perf_counter() - started)
        print(f"{name}: {statistics.median(times) * 1000:.0f} ms")
