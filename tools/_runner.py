"""Runs inside the sandboxed child process: executes one program against its tests.

Standard library only, self-contained: it is started as ``python -I _runner.py`` in a scratch
directory. It reads one JSON payload on stdin and writes one JSON line per finished test to a
private copy of stdout; fds 0-2 are pointed at /dev/null (or at a test's input) before any
untrusted code runs, so the program's own output cannot be mistaken for a result.
"""

import ast
import builtins
import hashlib
import io
import json
import linecache
import math
import os
import re
import resource
import signal
import sys
import time
import traceback
import types
from collections import deque

SOLUTION_FILE = "<solution>"


class TestTimeout(BaseException):
    """Raised by the alarm when one test runs past its time limit."""


class CappedWriter(io.TextIOBase):
    """A text stream that keeps at most ``limit`` characters and counts what it dropped."""

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.dropped = 0

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        room = self.limit - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(len(s), room)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    @property
    def buffer(self):  # programs that write bytes to sys.stdout.buffer
        return _BytesAdapter(self)

    def getvalue(self):
        return "".join(self.parts)


class _BytesAdapter:
    def __init__(self, text):
        self.text = text

    def write(self, b):
        return self.text.write(bytes(b).decode("utf-8", "replace"))

    def flush(self):
        pass


def _alarm(_signum, _frame):
    raise TestTimeout()


def _limit_resources(limits):
    def cap(which, value):
        if value is None:
            return
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_AS, limits.get("memory_bytes"))
    cap(resource.RLIMIT_CPU, limits.get("cpu_seconds"))
    cap(resource.RLIMIT_FSIZE, limits.get("file_bytes"))
    cap(resource.RLIMIT_NPROC, limits.get("processes"))
    cap(resource.RLIMIT_CORE, 0)


# "<enumerate object at 0x7f...>" is shown without its address: it differs on every run, so a prompt showing it
# would never repeat (nor replay from the response cache), and it tells the model nothing
MEMORY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _short(text, limit=300):
    return text if len(text) <= limit else text[:limit] + "..."


def canonical(value):
    """A value as ``==`` compares it, for grouping programs by behaviour: ``3.0`` is ``3``, a dict or a set in any
    order, floats to 12 significant digits and below 1e-9 zero (rounding noise); ``True`` stays apart from 1."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        value = 0.0 if abs(value) < 1e-9 else value
        return int(value) if value.is_integer() else float(format(value, ".12g"))
    if isinstance(value, (list, tuple)):
        return type(value)(canonical(v) for v in value)
    if isinstance(value, dict):
        return ("dict", sorted((repr(canonical(k)), repr(canonical(v))) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(repr(canonical(v)) for v in value))
    return value


def canonical_token(token):
    """A printed token as ``outputs_match`` compares it: integers by value (also written as floats), other numbers
    to 6 significant digits and below 1e-6 zero (its absolute tolerance)."""
    integer = re.fullmatch(r"([+-]?)0*(\d+)", token)  # not int(): it refuses over 4,300 digits
    if integer:
        sign, digits = integer.groups()
        return ("-" if sign == "-" and digits != "0" else "") + digits
    try:
        number = float(token)
    except ValueError:
        return token
    if not math.isfinite(number):
        return token
    if number.is_integer() and abs(number) < 1e15:  # a whole number printed as a float is that number
        return str(int(number))
    return format(0.0 if abs(number) < 1e-6 else number + 0.0, ".6g")


def digest(text):
    """A short fingerprint of an output, so outputs too long to show whole that differ after the cut stay apart."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


PLAIN_DEPTH = 100  # nesting a plain-data value may have


def to_plain(value, depth=0):
    """A value as JSON-able plain data, tagged where JSON would lose its type: ``{"tuple": [...]}``, ``{"set":
    [...]}``, ``{"dict": [[k, v], ...]}``, ``{"bytes": hex}``, ``{"float": "nan"}``, ``{"int": hex}`` (past 64 bits),
    ``{"complex": [re, im]}``. Anything else (an object, a generator, a file) is a TypeError: it is not plain data.
    Subclasses of the plain types become the plain type itself (their own ``__eq__`` does not cross)."""
    if depth > PLAIN_DEPTH:
        raise TypeError("nested too deep to be plain data")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        value = int(value)
        return value if -(2 ** 63) < value < 2 ** 63 else {"int": hex(value)}
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, str):
        return str(value)
    if isinstance(value, complex):
        return {"complex": [to_plain(value.real), to_plain(value.imag)]}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, list):
        return [to_plain(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [to_plain(v, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"frozenset" if isinstance(value, frozenset) else "set": [to_plain(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[to_plain(k, depth + 1), to_plain(v, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__} is not plain data")


_UNTAG = {"tuple": tuple, "set": set, "frozenset": frozenset}


def from_plain(obj):
    """The value ``to_plain`` encoded."""
    if isinstance(obj, list):
        return [from_plain(v) if isinstance(v, (list, dict)) else v for v in obj]
    if not isinstance(obj, dict):
        return obj
    (tag, body), = obj.items()
    if tag in _UNTAG:
        return _UNTAG[tag](from_plain(v) for v in body)
    if tag == "dict":
        return {from_plain(k): from_plain(v) for k, v in body}
    if tag == "int":
        return int(body, 16)
    if tag == "float":
        return float(body)
    if tag == "bytes":
        return bytes.fromhex(body)
    if tag == "complex":
        return complex(from_plain(body[0]), from_plain(body[1]))
    raise ValueError(f"unknown plain-data tag {tag!r}")


def value_digest(value, shown):
    """The fingerprint of a returned value as ``==`` compares it (``canonical``); of its plain repr ``shown`` when
    that is too large to canonicalise quickly, nested too deep, cyclic, or anything else goes wrong."""
    if len(shown) > 100_000:
        return digest(shown)
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(min(limit, 1000))  # a program may have raised it: a cyclic value then crashes
        return digest(repr(canonical(value)))
    except BaseException:  # noqa: BLE001 - untrusted values: the verdict must not depend on this
        return digest(shown)
    finally:
        sys.setrecursionlimit(limit)


def printed_digest(output):
    """The fingerprint of printed output as ``outputs_match`` compares it (``canonical_token`` by token)."""
    return digest(" ".join(canonical_token(t) for t in output.split()))


def _error_line(exc):
    name = type(exc).__name__
    msg = str(exc)
    return _short(f"{name}: {msg}" if msg else name)


def _solution_traceback(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in (SOLUTION_FILE, "<test>")]
    lines = [f'  line {f.lineno}, in {f.name}: {(f.line or "").strip()}' for f in frames[-3:]]
    return "\n".join(lines + [_error_line(exc)])


def _reason(exc):
    if isinstance(exc, TestTimeout):
        return "timeout"
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, RecursionError):
        return "recursion"
    if isinstance(exc, AssertionError):
        return "wrong answer"
    return "error"


def _with_timeout(seconds, fn):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _equality_assert(test):
    """For ``assert LEFT == RIGHT`` return the compiled sides, so the actual value can be shown."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    cmp = tree.body[0].test
    if not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.Eq)):
        return None
    left = compile(ast.Expression(cmp.left), "<test>", "eval")
    right = compile(ast.Expression(cmp.comparators[0]), "<test>", "eval")
    return left, right


def run_function_test(test, namespace, timeout, out_limit):
    """Run one assert-style snippet in the program's namespace."""
    result = {"test": test, "passed": False}
    linecache.cache["<test>"] = (len(test), None, test.splitlines(True), "<test>")
    captured = CappedWriter(out_limit)
    sys.stdout = captured
    try:
        sides = _equality_assert(test)
        if sides:
            left, right = sides
            actual = _with_timeout(timeout, lambda: eval(left, namespace))
            expected = eval(right, namespace)
            shown = repr(actual)
            result["actual"] = _short(MEMORY_ADDRESS.sub("", shown))
            result["expected"] = _short(repr(expected))
            result["passed"] = bool(actual == expected)
            if not result["passed"]:
                result["error"] = "AssertionError"
                result["reason"] = "wrong answer"
            if len(shown) > 300:
                result["digest"] = value_digest(actual, shown)
        else:
            code = compile(test, "<test>", "exec")
            _with_timeout(timeout, lambda: exec(code, namespace))
            result["passed"] = True
    except TestTimeout:
        result.update(error=f"Timed out after {timeout:g} s", timed_out=True, reason="timeout")
    except SystemExit as exc:
        result.update(error=f"SystemExit({exc.code!r}) during the test", reason="crash")
    except BaseException as exc:  # noqa: BLE001 - untrusted code may raise anything
        result.update(error=_error_line(exc), traceback=_solution_traceback(exc), reason=_reason(exc))
    finally:
        sys.stdout = sys.__stdout__
    if captured.dropped:
        result["output_dropped"] = captured.dropped
    return result


def run_call(test, namespace, entry_point, timeout):
    """Call the entry point with one plain-data argument list; the value returned, as plain-data JSON, and the
    call's own time."""
    result = {"test": test, "passed": False}
    captured = CappedWriter(1000)
    sys.stdout = captured
    try:
        args = from_plain(json.loads(test))
        function = namespace[entry_point]
        started = time.perf_counter()
        value = _with_timeout(timeout, lambda: function(*args))
        result["seconds"] = time.perf_counter() - started
        result["actual"] = json.dumps(to_plain(value))
        result["passed"] = True
    except TestTimeout:
        result.update(error=f"Timed out after {timeout:g} s", timed_out=True, reason="timeout")
    except SystemExit as exc:
        result.update(error=f"SystemExit({exc.code!r}) during the call", reason="crash")
    except BaseException as exc:  # noqa: BLE001 - the called code may raise anything
        result.update(error=_error_line(exc), traceback=_solution_traceback(exc), reason=_reason(exc))
    finally:
        sys.stdout = sys.__stdout__
    return result


def run_stdio_test(compiled, case, timeout, out_limit, index):
    """Run the whole program as __main__ with the case's input on fd 0."""
    path = f"stdin_{index}.txt"
    with open(path, "w", encoding="utf-8") as f:
        f.write(case["input"])
    fd = os.open(path, os.O_RDONLY)
    if fd != 0:  # fd 0 is free (and reused) when the previous test closed it, e.g. via open(0)
        os.dup2(fd, 0)
        os.close(fd)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    captured = CappedWriter(out_limit)
    sys.stdout = captured
    result = {"passed": False}  # the parent holds the test and its expected output, and compares
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        _with_timeout(timeout, lambda: exec(compiled, namespace))
    except SystemExit:
        pass
    except TestTimeout:
        result.update(error=f"Timed out after {timeout:g} s", timed_out=True, reason="timeout")
    except BaseException as exc:  # noqa: BLE001
        result.update(error=_error_line(exc), traceback=_solution_traceback(exc), reason=_reason(exc))
    finally:
        sys.stdout = sys.__stdout__
        sys.stdin = sys.__stdin__
    output = captured.getvalue()
    result["actual"] = _short(output, 2000)
    if captured.dropped:
        result["output_dropped"] = captured.dropped
        result.setdefault("reason", "output limit")
        result.setdefault("error", f"Output limit exceeded ({captured.dropped} characters cut)")
    elif "error" not in result:
        result["output_full"] = output
    if len(output) > 2000 and not captured.dropped:
        try:
            result["digest"] = printed_digest(output)
        except Exception:  # noqa: BLE001 - the verdict must not depend on a fingerprint
            pass
    return result


def _clip(text, limit=100):
    """Long values as the first 50 + '...' + last 50 characters (RethinkMCTS's released code)."""
    return text if len(text) <= limit else text[:50] + "..." + text[-50:]


def _safe_repr(value):
    try:
        return _clip(MEMORY_ADDRESS.sub("", repr(value)))
    except BaseException:  # noqa: BLE001 - a user __repr__ may raise anything
        return "<unprintable>"


def _snapshot(frame):
    return {name: _safe_repr(value) for name, value in frame.f_locals.items()
            if not name.startswith("__")
            and not isinstance(value, (types.ModuleType, types.FunctionType, type, types.BuiltinFunctionType))}


class Recorder:
    """Line and return events of the program's own frames: the first and last ``keep`` of them."""

    def __init__(self, keep=400):
        self.head = []
        self.tail = deque(maxlen=keep)
        self.keep = keep
        self.count = 0
        self.frames = {}

    def record(self, event):
        self.count += 1
        if len(self.head) < self.keep:
            self.head.append(event)
        else:
            self.tail.append(event)

    def tracer(self, frame, event, arg):
        if frame.f_code.co_filename != SOLUTION_FILE:
            return None
        if event in ("line", "return"):
            frame_no = self.frames.setdefault(id(frame), len(self.frames))
            item = {"line": frame.f_lineno, "event": event, "fn": frame.f_code.co_name, "frame": frame_no,
                    "vars": _snapshot(frame)}
            if event == "return":
                item["ret"] = _safe_repr(arg)
            self.record(item)
        return self.tracer

    def events(self):
        dropped = self.count - len(self.head) - len(self.tail)
        return self.head + ([{"event": "gap", "dropped": dropped}] if dropped else []) + list(self.tail)


def run_traced(compiled, payload, namespace):
    """Run one test with a line tracer on the program's frames; return the recorded events."""
    index = payload["trace"]
    timeout = payload["timeout"]
    case = payload["tests"][index]
    recorder = Recorder()
    sys.stdout = CappedWriter(payload.get("output_limit", 1_000_000))
    outcome = {"trace": None}
    try:
        if payload["kind"] == "stdio":
            with open("stdin_trace.txt", "w", encoding="utf-8") as f:
                f.write(case["input"])
            fd = os.open("stdin_trace.txt", os.O_RDONLY)
            if fd != 0:
                os.dup2(fd, 0)
                os.close(fd)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            target = compiled
            namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        else:
            linecache.cache["<test>"] = (len(case), None, case.splitlines(True), "<test>")
            target = compile(case, "<test>", "exec")

        def go():
            sys.settrace(recorder.tracer)
            try:
                exec(target, namespace)
            finally:
                sys.settrace(None)

        _with_timeout(timeout, go)
    except TestTimeout:
        return {"trace": None, "error": f"Timed out after {timeout:g} s"}
    except SystemExit:
        pass
    except BaseException as exc:  # noqa: BLE001 - the failing test's exception is part of the trace
        outcome["exception"] = _error_line(exc)
    finally:
        sys.stdout = sys.__stdout__
    outcome["trace"] = recorder.events()
    return outcome


def _children(pid):
    """The ids of a process's children (from /proc)."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return kids


def guard():
    """Without bubblewrap: fork, and keep this process between the framework and the program.

    The child returns and runs the tests, so ``os.kill(os.getppid(), ...)`` in a program hits this
    guardian, not the framework. The guardian is a child subreaper: processes the program leaves
    behind, detached or not, become its children, and it kills them all once the tests are done.
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
    runner = os.fork()
    if runner == 0:
        return
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the results pipe must close when the runner and its descendants are gone
        os.dup2(devnull, fd)
    status = 1
    while True:
        try:
            pid, code = os.wait()
        except ChildProcessError:
            break
        if pid == runner:
            status = os.waitstatus_to_exitcode(code)
            break
    for _ in range(100):  # kill what is left; a forking process may need a few rounds
        left = _children(os.getpid())
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    os._exit(status if status >= 0 else 128 - status)


def main():
    payload = json.loads(sys.stdin.read())
    if payload.get("guard"):
        guard()
    sys.path.extend(payload.get("sys_path", []))  # started with -S: third-party packages stay importable
    if not hasattr(builtins, "exit"):  # site adds exit() and quit(); programs use them

        def _exit(code=None):
            raise SystemExit(code)

        builtins.exit = builtins.quit = _exit
    results = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = sys.__stderr__ = sys.stdout
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(payload.get("recursion_limit", 10000))
    _limit_resources(payload.get("limits", {}))
    uid = payload.get("drop_to_uid")
    if uid is not None and os.getuid() == 0:  # as root, rlimits on processes would not apply
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)

    def emit(obj):
        results.write(json.dumps(obj) + "\n")
        results.flush()

    timeout = payload["timeout"]
    timeouts = payload.get("timeouts") or []

    def limit(i):
        return timeouts[i] if i < len(timeouts) else timeout

    out_limit = payload.get("output_limit", 1_000_000)
    tests = payload["tests"]
    code = payload["code"]
    linecache.cache[SOLUTION_FILE] = (len(code), None, code.splitlines(True), SOLUTION_FILE)
    try:
        compiled = compile(code, SOLUTION_FILE, "exec")
    except SyntaxError as exc:
        emit({"setup_error": f"SyntaxError: {exc.msg} (line {exc.lineno})", "reason": "syntax"})
        return
    except (ValueError, MemoryError) as exc:
        emit({"setup_error": _error_line(exc), "reason": "syntax"})
        return

    if payload["kind"] == "stdio" and "trace" in payload:
        emit(run_traced(compiled, payload, None))
        return
    if payload["kind"] == "stdio":
        for i in range(payload.get("start", 0), len(tests)):
            emit({"i": i, **run_stdio_test(compiled, tests[i], limit(i), out_limit, i)})
        return

    namespace = {"__name__": "__solution__", "__builtins__": __builtins__}
    try:
        _with_timeout(timeout, lambda: exec(compiled, namespace))
    except TestTimeout:
        emit({"setup_error": f"Timed out after {timeout:g} s while defining the program", "reason": "timeout"})
        return
    except BaseException as exc:  # noqa: BLE001
        reason = "crash" if isinstance(exc, SystemExit) else _reason(exc)
        emit({"setup_error": _solution_traceback(exc), "reason": reason})
        return
    if "trace" in payload:
        emit(run_traced(compiled, payload, namespace))
        return
    if payload.get("support"):
        exec(compile(payload["support"], "<support>", "exec"), namespace)
    for i in range(payload.get("start", 0), len(tests)):
        if payload["kind"] == "calls":
            emit({"i": i, **run_call(tests[i], namespace, payload["entry_point"], limit(i))})
        else:
            emit({"i": i, **run_function_test(tests[i], namespace, limit(i), out_limit)})


if __name__ == "__main__":
    main()
