"""For the released CodePRM and RethinkMCTS runs (their ``shims/run_released.py``): the HumanEval executor
(``executors.HumanevalExecutor``) gives each test 11 s of its own instead of 10, as their APPS executor does.

That executor runs a program's tests in a child process and waits 10 s for the whole run (``p.join(timeout=10)``),
while each test also has 10 s of its own (an alarm in the child, the module's ``timeout``). With both at 10 s a test
out of time reads at random as "TIMEOUT" (the alarm first) or as 21 "No result got!" failures (the wait first): 3 of
14 runs of one such program on this machine read "TIMEOUT", so a rerun on the same replies could take another path.
With 11 s the wait always ends first, as its start before the first test's means it should. The limit is set when
the module is first imported, whoever imports it: importing it early would change the released import order (its
package and its models import each other)."""

import importlib.abc
import sys

MODULE = "executors.HumanevalExecutor"
TEST_LIMIT_S = 11


class _SetTestLimit(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        run_module = spec.loader.exec_module

        def run_and_set_limit(module):
            run_module(module)
            module.timeout = TEST_LIMIT_S

        spec.loader.exec_module = run_and_set_limit
        return spec


def install() -> None:
    """Set the test limit of the released HumanEval executor when it is imported."""
    sys.meta_path.insert(0, _SetTestLimit())
