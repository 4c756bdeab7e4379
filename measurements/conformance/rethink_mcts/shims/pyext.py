"""Shim: the released HumanEval executor imports pyext's RuntimeModule, which only its APPS executor uses. pyext
(last released 2014) calls ``inspect.getargspec`` and does not install on Python 3.11."""

from _unused import Unused

RuntimeModule = Unused("pyext.RuntimeModule")
