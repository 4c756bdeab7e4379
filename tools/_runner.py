"""The sandbox's runner: a trusted test process, and the program under test in a child process of its own.

Standard library only, self-contained: it is started as ``python -I -S _runner.py`` in a scratch directory. It
reads one JSON payload (the program, its tests) on stdin and writes one JSON line per finished test to stdout. It
never runs the program itself: before it reads the payload it forks the program's process (``--candidate`` when a
later one is started afresh), which holds no test, no expected value and no descriptor but /dev/null and its own
request/reply pipe. The tests run here, against plain data: each call of a program's function crosses the pipe as
plain data (arguments out; the value returned, or a handle to an object that is not plain data, back), so nothing
the program does can make a verdict say "passed" without computing the right answers. This process is made
non-dumpable, so a program running as the same user cannot read its memory or descriptors; as root, the program
runs as nobody.
"""

import _ast  # not ast, nor traceback, hashlib or collections: each start-up costs milliseconds, per program run
import builtins
import io
import json
import linecache
import math
import os
import re
import resource
import select
import signal
import sys
import time

SOLUTION_FILE = "<solution>"
REQUEST_FD, REPLY_FD = 3, 4  # the program's end of its pipe
REPLY_BYTES_LIMIT = 64 * 1024 * 1024  # one reply of the program's process, at most
CALL_GRACE_S = 1.0  # past a call's own limit, before its process is killed: a reply on its way, its encoding
STARTUP_GRACE_S = 3.0  # the program's process starting (and, after a crash, a fresh interpreter)


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
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


PLAIN_DEPTH = 100  # nesting a plain-data value may have


def to_plain(value, depth=0, other=None):
    """A value as JSON-able plain data, tagged where JSON would lose its type: ``{"tuple": [...]}``, ``{"set":
    [...]}``, ``{"dict": [[k, v], ...]}``, ``{"bytes": hex}``, ``{"float": "nan"}``, ``{"int": hex}`` (past 64 bits),
    ``{"complex": [re, im]}``. Anything else (an object, a generator, a file) is a TypeError: it is not plain data,
    unless ``other`` encodes it. Subclasses of the plain types become the plain type itself (their own ``__eq__``
    does not cross); a NumPy scalar becomes the Python number it holds."""
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
        return [to_plain(v, depth + 1, other) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [to_plain(v, depth + 1, other) for v in value]}
    if isinstance(value, (set, frozenset)):
        tag = "frozenset" if isinstance(value, frozenset) else "set"
        return {tag: [to_plain(v, depth + 1, other) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[to_plain(k, depth + 1, other), to_plain(v, depth + 1, other)] for k, v in value.items()]}
    if type(value).__module__ == "numpy" and type(value).__name__ != "ndarray" and hasattr(value, "item"):
        item = value.item()
        if isinstance(item, (bool, int, float, complex, str, bytes)):
            return to_plain(item, depth + 1)
    if other is not None:
        return other(value)
    raise TypeError(f"a {type(value).__name__} is not plain data")


_UNTAG = {"tuple": tuple, "set": set, "frozenset": frozenset}


def from_plain(obj, handle=None):
    """The value ``to_plain`` encoded (``handle`` turns a ``{"handle": n}`` tag into its object)."""
    if isinstance(obj, list):
        return [from_plain(v, handle) if isinstance(v, (list, dict)) else v for v in obj]
    if not isinstance(obj, dict):
        return obj
    (tag, body), = obj.items()
    if tag in _UNTAG:
        return _UNTAG[tag](from_plain(v, handle) for v in body)
    if tag == "dict":
        return {from_plain(k, handle): from_plain(v, handle) for k, v in body}
    if tag == "int":
        return int(body, 16)
    if tag == "float":
        return float(body)
    if tag == "bytes":
        return bytes.fromhex(body)
    if tag == "complex":
        return complex(from_plain(body[0]), from_plain(body[1]))
    if tag == "handle" and handle is not None:
        return handle(body)
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


def _frames(exc, files=(SOLUTION_FILE, "<test>")):
    """The traceback's frames of ``files``, one line each: number, function, source line."""
    lines, tb = [], exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip() if tb.tb_lineno else ""
            lines.append(f"  line {tb.tb_lineno}, in {code.co_name}: {line}")
        tb = tb.tb_next
    return lines


def _solution_traceback(exc):
    return "\n".join(_frames(exc)[-3:] + [_error_line(exc)])


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
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _clip(text, limit=100):
    """Long values as the first 50 + '...' + last 50 characters (RethinkMCTS's released code)."""
    return text if len(text) <= limit else text[:50] + "..." + text[-50:]


def _safe_repr(value):
    try:
        return _clip(MEMORY_ADDRESS.sub("", repr(value)))
    except BaseException:  # noqa: BLE001 - a user __repr__ may raise anything
        return "<unprintable>"


def _snapshot(frame):
    import types

    return {name: _safe_repr(value) for name, value in frame.f_locals.items()
            if not name.startswith("__")
            and not isinstance(value, (types.ModuleType, types.FunctionType, type, types.BuiltinFunctionType))}


class Recorder:
    """Line and return events of the program's own frames: the first and last ``keep`` of them."""

    def __init__(self, keep=400):
        self.head = []
        from collections import deque

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


class ReplyTooLarge(ValueError):
    """A reply past ``REPLY_BYTES_LIMIT``: a value too large to cross, not a forgery."""


class Channel:
    """JSON lines over a pair of pipe ends."""

    def __init__(self, read_fd, write_fd):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.buffer = b""

    def send(self, obj, deadline=None):
        """Write one message: on a non-blocking end by ``deadline`` (monotonic seconds), else blocking."""
        data = (json.dumps(obj) + "\n").encode()
        while data:
            try:
                data = data[os.write(self.write_fd, data):]
                continue
            except BlockingIOError:  # the pipe is full (a non-blocking end): wait until it drains
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [self.write_fd], [], remaining)[1]:
                raise TimeoutError("the program's process stopped reading")

    def receive(self, deadline=None):
        """One message, or None at end of file; TimeoutError past ``deadline``, ValueError for a malformed one
        (``ReplyTooLarge`` past the size limit)."""
        parts, size = [self.buffer], len(self.buffer)
        while b"\n" not in parts[-1]:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self.read_fd], [], [], remaining)[0]:
                    raise TimeoutError("no reply in time")
            chunk = os.read(self.read_fd, 1 << 16)  # not larger: a bigger buffer costs an mmap per read
            if not chunk:
                return None
            parts.append(chunk)
            size += len(chunk)
            if size > REPLY_BYTES_LIMIT:
                raise ReplyTooLarge(f"a reply over {REPLY_BYTES_LIMIT >> 20} MB")
        line, self.buffer = b"".join(parts).split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a reply that is not an object")
        return message


# --- the program's process ------------------------------------------------------------------------------------

class Program:
    """The program under test, in its own process: loads it and answers requests with plain data."""

    def __init__(self, init):
        self.init = init
        self.namespace = {"__name__": "__solution__", "__builtins__": builtins}
        self.handles = []
        self.recorder = Recorder() if init.get("trace") else None
        self.out_limit = init.get("output_limit", 1_000_000)
        self.builtins = dict(vars(builtins))  # as they were before the program could change them

    def encode(self, value, show):
        """A value as a reply carries it: plain data, or a handle to the object here."""
        try:
            reply = {"value": to_plain(value)}
        except (TypeError, RecursionError):
            self.handles.append(value)
            reply = {"handle": len(self.handles) - 1, "type": type(value).__name__}
            show = True
        if show:
            try:
                shown = repr(value)
            except BaseException as exc:  # noqa: BLE001 - a user __repr__ may raise anything
                shown = f"<unprintable {type(value).__name__}: {_error_line(exc)}>"
            reply["shown"] = _short(MEMORY_ADDRESS.sub("", shown))
            if len(shown) > 300:
                reply["digest"] = value_digest(value, shown)
        return reply

    def resolve(self, ref):
        if "builtin" in ref:
            return self.builtins[ref["builtin"]]
        return self.handles[ref["handle"]]

    def decode(self, plain):
        return from_plain(plain, self.handles.__getitem__)

    def raised(self, exc):
        frames = _frames(exc, (SOLUTION_FILE,))
        return {"raised": {"type": type(exc).__name__, "error": _error_line(exc), "frames": frames,
                           "reason": _reason(exc)}}

    def traced(self, fn):
        if self.recorder is None:
            return fn()
        sys.settrace(self.recorder.tracer)
        try:
            return fn()
        finally:
            sys.settrace(None)

    def load(self):
        """Compile and define the program; the reply names what the tests asked for."""
        code = self.init["code"]
        linecache.cache[SOLUTION_FILE] = (len(code), None, code.splitlines(True), SOLUTION_FILE)
        try:
            self.compiled = compile(code, SOLUTION_FILE, "exec")
        except SyntaxError as exc:
            return {"setup_error": f"SyntaxError: {exc.msg} (line {exc.lineno})", "reason": "syntax"}
        except (ValueError, MemoryError, RecursionError) as exc:
            return {"setup_error": _error_line(exc), "reason": "syntax"}
        if self.init["kind"] == "stdio":
            return {"ready": True}
        timeout = self.init["timeout"]
        try:
            _with_timeout(timeout, lambda: exec(self.compiled, self.namespace))
        except TestTimeout:
            return {"setup_error": f"Timed out after {timeout:g} s while defining the program", "reason": "timeout"}
        except BaseException as exc:  # noqa: BLE001
            reason = "crash" if isinstance(exc, SystemExit) else _reason(exc)
            return {"setup_error": _solution_traceback(exc), "reason": reason}
        names = {name: self.encode(self.namespace[name], False) for name in self.init.get("names", ())
                 if name in self.namespace}
        return {"ready": True, "names": names}

    def call(self, request):
        captured = CappedWriter(self.out_limit)
        sys.stdout = captured
        reply = {}
        try:
            fn = self.resolve(request["target"])
            if "attr" in request:
                if "value" in request:
                    value = self.decode(request["value"])
                    reply["ok"] = self.encode(_with_timeout(request["timeout"], lambda: setattr(
                        fn, request["attr"], value)), False)
                else:
                    reply["ok"] = self.encode(_with_timeout(request["timeout"], lambda: getattr(
                        fn, request["attr"])), request.get("show", False))
                return reply
            args = self.decode(request.get("args", []))
            kwargs = {k: self.decode(v) for k, v in request.get("kwargs", [])}
            started = time.perf_counter()
            value = _with_timeout(request["timeout"], lambda: self.traced(lambda: fn(*args, **kwargs)))
            reply["seconds"] = time.perf_counter() - started
            reply["ok"] = self.encode(value, request.get("show", False))
        except TestTimeout:
            reply["timeout"] = True
        except SystemExit as exc:
            reply["exit"] = repr(exc.code)
        except BaseException as exc:  # noqa: BLE001 - the called code may raise anything
            reply.update(self.raised(exc))
        finally:
            sys.stdout = sys.__stdout__
            reply["dropped"] = captured.dropped
        return reply

    def stdio(self, request):
        """Run the whole program as __main__ with the request's input on fd 0; its printed output."""
        path = f"stdin_{request['index']}.txt"
        with open(path, "w", encoding="utf-8") as f:
            f.write(request["input"])
        fd = os.open(path, os.O_RDONLY)
        if fd != 0:  # fd 0 is free (and reused) when the previous test closed it, e.g. via open(0)
            os.dup2(fd, 0)
            os.close(fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        captured = CappedWriter(self.out_limit)
        sys.stdout = captured
        reply = {}
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        try:
            _with_timeout(request["timeout"], lambda: self.traced(lambda: exec(self.compiled, namespace)))
        except SystemExit:
            pass
        except TestTimeout:
            reply["timeout"] = True
        except BaseException as exc:  # noqa: BLE001
            reply.update(self.raised(exc))
        finally:
            sys.stdout = sys.__stdout__
            sys.stdin = sys.__stdin__
        reply.update(output=captured.getvalue(), dropped=captured.dropped)
        return reply

    def answer(self, request):
        op = request.get("op")
        if op == "call":
            return self.call(request)
        if op == "stdio":
            return self.stdio(request)
        if op == "events":
            events = self.recorder.events() if self.recorder else []
            self.recorder = Recorder() if self.recorder else None
            return {"events": events}
        return {"raised": {"type": "ValueError", "error": f"unknown request {op!r}", "frames": [], "reason": "error"}}


def candidate_main():
    """The program's process: set itself up from the first request, then answer requests until the pipe closes."""
    channel = Channel(REQUEST_FD, REPLY_FD)
    init = channel.receive()
    if init is None:
        return
    sys.path.extend(init.get("sys_path", []))  # started with -S: third-party packages stay importable
    if not hasattr(builtins, "exit"):  # site adds exit() and quit(); programs use them

        def _exit(code=None):
            raise SystemExit(code)

        builtins.exit = builtins.quit = _exit
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = sys.__stderr__ = sys.stdout
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(init.get("recursion_limit", 10000))
    _limit_resources(init.get("limits", {}))
    uid = init.get("drop_to_uid")
    if uid is not None and os.getuid() == 0:  # as root, rlimits on processes would not apply
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    program = Program(init)
    channel.send({"id": init.get("id"), **program.load()})
    while True:
        request = channel.receive()
        if request is None:
            return
        channel.send({"id": request.get("id"), **program.answer(request)})


def _attach_program_end(read_end, write_end):
    """In a fresh child: the pipe ends at the program's descriptors, /dev/null at 0-2, nothing else open."""
    import fcntl

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (read_end, write_end)]
    os.dup2(high[0], REQUEST_FD)
    os.dup2(high[1], REPLY_FD)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(REPLY_FD + 1, 1 << 20)
    os.setsid()  # its own process group: killed whole, with what it started


def start_program_process(fresh):
    """Fork the program's process; ``fresh`` execs a new interpreter in it (this one may hold tests by then),
    else the fork itself answers (only before any test is read). Returns its pid and this side's channel."""
    to_child, from_parent = os.pipe()[::-1]
    from_child, to_parent = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _attach_program_end(from_parent, to_parent)
            if fresh:
                flags = ["-I", "-S"] if sys.flags.no_site else ["-I"]
                os.execv(sys.executable, [sys.executable, *flags, os.path.abspath(__file__), "--candidate"])
            candidate_main()
        finally:
            os._exit(0)
    os.close(from_parent)
    os.close(to_parent)
    os.set_blocking(to_child, False)
    return pid, Channel(from_child, to_child)


# --- the trusted side ---------------------------------------------------------------------------------------

MALFORMED = "the program's process sent a malformed reply: refused"


class ProgramFailed(BaseException):
    """A call of the program did not return: ``reason`` and ``error`` say why (never caught by a test's
    ``except Exception``)."""

    def __init__(self, reason, error, timed_out=False, frames=()):
        super().__init__(error)
        self.reason, self.error, self.timed_out, self.frames = reason, error, timed_out, list(frames)


_MIRRORED = {}


def program_raised(info):
    """The exception a call of the program raised, as one here: a subclass of the built-in exception of its name
    (so a test's ``except ValueError`` catches it), carrying the program's frames and reason."""
    name = info.get("type") if isinstance(info.get("type"), str) else ""
    base = getattr(builtins, name, None)
    error = _text(info.get("error"), 300) or _short(name) or "error"
    reason = _text(info.get("reason"), 40) or "error"
    if not (isinstance(base, type) and issubclass(base, Exception)):
        return ProgramFailed(reason, error, frames=_lines(info.get("frames")))
    if base not in _MIRRORED:
        _MIRRORED[base] = type(f"Program{name}", (base,), {"program_info": None})
    exc = _MIRRORED[base](error)
    exc.program_info = {"error": error, "frames": _lines(info.get("frames")), "reason": reason}
    return exc


def _text(value, limit=None):
    """A text field of a reply, or None when it is anything else; cut to ``limit`` characters when given."""
    if not isinstance(value, str):
        return None
    return value if limit is None else _short(value, limit)


def _lines(value):
    """The last three traceback lines of a reply, each cut short."""
    return [_short(v) for v in value if isinstance(v, str)][-3:] if isinstance(value, list) else []


class Remote:
    """A handle to an object in the program's process: calls, attributes and the built-in protocols cross the pipe;
    it equals nothing but itself (a value that is not plain data passes no comparison)."""

    __slots__ = ("_process", "_ref", "_type", "_shown", "_generation")  # noqa: RUF023 - in assignment order

    def __init__(self, process, ref, info):
        object.__setattr__(self, "_process", process)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_type", _text(info.get("type"), 100) or "object")
        object.__setattr__(self, "_shown", _text(info.get("shown"), 300) or f"<{self._type}>")
        object.__setattr__(self, "_generation", process.generation)

    @property
    def _live(self):
        """The process holding the object; a failure when that process has been replaced since."""
        if self._generation != self._process.generation:
            raise ProgramFailed("crash", "the program's process was started again: its objects are gone")
        return self._process

    def __call__(self, *args, **kwargs):
        return self._live.call(self._ref, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") or name in Remote.__slots__:
            raise AttributeError(name)
        return self._live.get_attr(self._ref, name)

    def __reduce_ex__(self, protocol):
        raise TypeError("a handle to an object in the program's process cannot be copied or pickled")

    def __setattr__(self, name, value):
        self._live.set_attr(self._ref, name, value)

    def _builtin(self, name, *args):
        return self._live.call({"builtin": name}, (self, *args), {})

    def _method(self, name, *args):
        return self._live.get_attr(self._ref, name)(*args)

    def __len__(self):
        return self._builtin("len")

    def __iter__(self):
        return self._builtin("iter")

    def __next__(self):
        return self._builtin("next")

    def __getitem__(self, key):
        return self._method("__getitem__", key)

    def __setitem__(self, key, value):
        self._method("__setitem__", key, value)

    def __contains__(self, item):
        return self._method("__contains__", item)

    def __bool__(self):
        return self._builtin("bool")

    def __str__(self):
        return self._builtin("str")

    def __repr__(self):
        return self._shown

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __hash__(self):
        return id(self)


class ProgramProcess:
    """The program's process as the tests see it: starts it (again after it died), loads the program, and turns
    each call into a request whose reply is plain data or a ``Remote`` handle."""

    def __init__(self, payload, first):
        self.payload = payload
        self.first = first  # forked before the payload was read
        self.pid = None
        self.channel = None
        self.generation = 0
        self.requests = 0
        self.budget = math.inf
        self.call_limit = None
        self.show = False
        self.last = None  # the value the last call returned, and how the program's process showed it
        self.dropped = 0

    def start(self, wanted, cpu_seconds):
        """Start and load the program; the load reply (``setup_error``, or the names the tests asked for)."""
        self.generation += 1
        if self.first is not None:
            (self.pid, self.channel), self.first = self.first, None
        else:
            self.pid, self.channel = start_program_process(fresh=True)
        p = self.payload
        limits = dict(p.get("limits", {}))
        limits["cpu_seconds"] = int(cpu_seconds) + 1
        init = {"id": 0, "code": p["code"], "kind": p["kind"], "timeout": p["timeout"], "names": sorted(wanted),
                "limits": limits, "sys_path": p.get("sys_path", []), "drop_to_uid": p.get("drop_to_uid"),
                "output_limit": p.get("output_limit", 1_000_000), "trace": "trace" in p,
                "recursion_limit": p.get("recursion_limit", 10000)}
        try:
            reply = self.round_trip(init, p["timeout"] + STARTUP_GRACE_S - CALL_GRACE_S)
        except ProgramFailed as exc:
            if exc.timed_out:
                return {"setup_error": f"Timed out after {p['timeout']:g} s while defining the program (killed)",
                        "reason": "timeout"}
            if exc.reason == "crash":
                return {"setup_error": f"{exc.error} while defining the program", "reason": "crash"}
            return {"setup_error": MALFORMED, "reason": "forged"}
        if not (reply.get("ready") is True or "setup_error" in reply):
            self.stop()
            return {"setup_error": MALFORMED, "reason": "forged"}
        if "setup_error" in reply:
            self.stop()
            return {"setup_error": _text(reply["setup_error"], 2000) or "the program could not be set up",
                    "reason": _text(reply.get("reason"), 40) or "error"}
        names = reply.get("names") if isinstance(reply.get("names"), dict) else {}
        try:
            return {"names": {n: self.value(v) for n, v in names.items() if n in wanted}}
        except (ValueError, TypeError, KeyError, RecursionError):
            self.stop()
            return {"setup_error": MALFORMED, "reason": "forged"}

    @property
    def alive(self):
        return self.pid is not None

    def stop(self, ended=False):
        """Kill the process and its group; why it ended, as a test's error (``ended``: it closed its pipe, so its
        own exit status is waited for a moment before the kill)."""
        if self.pid is None:
            return "The program ended unexpectedly"
        code = None
        try:
            for _ in range(100 if ended else 1):
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    code = os.waitstatus_to_exitcode(status)
                    break
                if ended:
                    time.sleep(0.01)
            os.killpg(self.pid, signal.SIGKILL)
        except (ChildProcessError, OSError):
            pass
        if code is None:  # killed here: the caller says why
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            code = 0
        for fd in (self.channel.read_fd, self.channel.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.pid = self.channel = None
        if code == -signal.SIGXCPU:
            return "CPU time limit exceeded"
        if code < 0:
            return f"Killed by signal {signal.Signals(-code).name}"
        if code > 0:
            return f"The program exited with status {code}"
        return "The program ended unexpectedly"

    def value(self, info):
        """A reply's value: plain data, or a handle."""
        if not isinstance(info, dict):
            raise ValueError("not a value")
        if "value" in info:
            return from_plain(info["value"])
        handle = info["handle"]
        if type(handle) is not int:
            raise ValueError("not a handle")
        return Remote(self, {"handle": handle}, info)

    def encode(self, value):
        def handle(obj):
            if isinstance(obj, Remote) and obj._process is self and obj._generation == self.generation:
                return obj._ref
            raise TypeError(f"a {type(obj).__name__} cannot be passed to the program (not plain data)")

        return to_plain(value, other=handle)

    def call(self, ref, args, kwargs):
        """Call the object ``ref`` names in the program's process; the value it returned."""
        return self.request(ref, args=self.encode(list(args)),
                            kwargs=[[str(k), self.encode(v)] for k, v in kwargs.items()])

    def get_attr(self, ref, name):
        """An attribute of an object in the program's process."""
        return self.request(ref, attr=name)

    def set_attr(self, ref, name, value):
        """Set an attribute of an object in the program's process."""
        self.request(ref, attr=name, value=self.encode(value))

    def request(self, target, **fields):
        """One call request under the test's remaining time (or ``call_limit``); its value, or the program's
        exception raised here."""
        if self.pid is None:
            raise ProgramFailed("crash", "The program ended unexpectedly")
        limit = self.budget if self.call_limit is None else self.call_limit
        if limit <= 0:
            raise ProgramFailed("timeout", "Timed out", timed_out=True)
        self.requests += 1
        request = {"id": self.requests, "op": "call", "target": target, "timeout": limit, "show": self.show,
                   **fields}
        return self.exchange(request, limit)

    def round_trip(self, request, limit):
        """Send one request and read its reply within ``limit`` (and a grace); a process that hangs, dies, or
        answers out of turn or malformed is killed, and that is a ``ProgramFailed``."""
        deadline = time.monotonic() + limit + CALL_GRACE_S
        try:
            self.channel.send(request, deadline)
            reply = self.channel.receive(deadline)
        except TimeoutError:
            self.stop()
            raise ProgramFailed("timeout", "Timed out (killed)", timed_out=True) from None
        except ReplyTooLarge as exc:
            self.stop()
            raise ProgramFailed("output limit", f"the program returned {exc}: refused") from None
        except (ValueError, OSError, RecursionError):
            self.stop()
            raise ProgramFailed("forged", MALFORMED) from None
        if reply is None:
            raise ProgramFailed("crash", self.stop(ended=True))
        if reply.get("id") != request["id"]:
            self.stop()
            raise ProgramFailed("forged", "the program's process answered another request: refused")
        return reply

    def exchange(self, request, limit):
        started = time.monotonic()
        try:
            reply = self.round_trip(request, limit)
        finally:
            if self.call_limit is None:
                self.budget -= time.monotonic() - started
        dropped = reply.get("dropped")
        if type(dropped) is int:
            self.dropped += max(0, dropped)
        if reply.get("timeout") is True:
            raise ProgramFailed("timeout", "Timed out", timed_out=True)
        if "exit" in reply:
            raise ProgramFailed("crash", f"SystemExit({_text(reply['exit'], 100) or ''}) during the test")
        if "raised" in reply:
            info = reply["raised"] if isinstance(reply["raised"], dict) else {}
            if info.get("type") == "StopIteration" and request["target"].get("builtin") == "next":
                raise StopIteration
            raise program_raised(info)
        try:
            result = self.value(reply.get("ok"))
        except (ValueError, TypeError, KeyError, RecursionError):
            self.stop()
            raise ProgramFailed("forged", MALFORMED) from None
        info = reply["ok"]
        self.last = (result, _text(info.get("shown")), _text(info.get("digest")), reply.get("seconds"), info)
        return result

    def stdio(self, index, text, limit):
        """Run the program on one input; the reply (``output``, ``dropped``, or what stopped it)."""
        self.requests += 1
        return self.round_trip({"id": self.requests, "op": "stdio", "index": index, "input": text,
                                "timeout": limit}, limit)

    def events(self):
        """The trace events recorded so far (an empty list when the process is gone or answers badly)."""
        if self.pid is None:
            return []
        self.requests += 1
        try:
            reply = self.round_trip({"id": self.requests, "op": "events"}, STARTUP_GRACE_S - CALL_GRACE_S)
        except ProgramFailed:
            return []
        events = reply.get("events")
        return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []

    def begin(self, limit):
        """A new test: its time budget for the program's calls, no output counted, nothing shown yet."""
        self.budget, self.call_limit, self.dropped, self.last, self.show = limit, None, 0, None, False

    def shown(self, value):
        """How a test's value is shown, and its fingerprint when too long to show whole: as the program's process
        showed it when it is what a call returned, else its repr here."""
        if self.last is not None and self.last[0] is value and self.last[1] is not None:
            return _short(self.last[1]), _text(self.last[2], 64)
        full = repr(value)
        return _short(MEMORY_ADDRESS.sub("", full)), value_digest(value, full) if len(full) > 300 else None

    def close(self):
        """Kill the program's process, started or still waiting to be."""
        if self.first is not None:
            (self.pid, self.channel), self.first = self.first, None
        if self.pid is not None:
            self.stop()


def call_within(seconds, fn, *args):
    """Call ``fn`` under its own time limit rather than the test's (EvalPlus limits the call alone)."""
    if not isinstance(fn, Remote):
        return fn(*args)
    process = fn._process
    process.call_limit = seconds
    try:
        return fn(*args)
    finally:
        process.call_limit = None


def _parse(source):
    """The syntax tree of ``source`` (``ast.parse`` without importing ``ast``)."""
    return compile(source, "<test>", "exec", _ast.PyCF_ONLY_AST)


def _walk(tree):
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, _ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, _ast.AST))


def _parsed(test):
    """A test's syntax tree, or None when it does not parse (it then fails as it runs)."""
    try:
        return _parse(test)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _equality_assert(tree):
    """For a test ``assert LEFT == RIGHT`` (its tree) return the compiled sides, so the actual value can be shown."""
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], _ast.Assert):
        return None
    cmp = tree.body[0].test
    if not (isinstance(cmp, _ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], _ast.Eq)):
        return None
    left = compile(_ast.Expression(cmp.left), "<test>", "eval")
    right = compile(_ast.Expression(cmp.comparators[0]), "<test>", "eval")
    return left, right


def names_read(trees):
    """Every name the tests' trees read: the superset of what a test may need from the program."""
    return {node.id for tree in trees if tree is not None for node in _walk(tree) if isinstance(node, _ast.Name)}


def _failure(exc, limit):
    """A failed test's fields for an exception a test raised (its own, or one the program raised)."""
    if isinstance(exc, ProgramFailed):
        if exc.timed_out:
            killed = " (killed)" if "killed" in exc.error else ""
            return {"error": f"Timed out after {limit:g} s{killed}", "timed_out": True, "reason": "timeout"}
        result = {"error": exc.error, "reason": exc.reason}
        if exc.frames:
            result["traceback"] = "\n".join((_frames(exc, ("<test>",)) + exc.frames)[-3:] + [exc.error])
        return result
    info = getattr(exc, "program_info", None)
    if info is not None:  # the program raised it: its frames after the test's
        frames = (_frames(exc, ("<test>",)) + info["frames"])[-3:]
        return {"error": info["error"], "traceback": "\n".join(frames + [info["error"]]), "reason": info["reason"]}
    return {"error": _error_line(exc), "traceback": _solution_traceback(exc), "reason": _reason(exc)}


def run_function_test(test, namespace, limit, process, tree=None):
    """Run one test snippet (``tree``: its syntax tree, when parsed already) here, against the program's process."""
    result = {"passed": False}
    linecache.cache["<test>"] = (len(test), None, test.splitlines(True), "<test>")
    process.begin(limit)
    try:
        sides = _equality_assert(tree if tree is not None else _parsed(test))
        if sides:
            left, right = sides
            process.show = True
            try:
                actual = eval(left, namespace)
            finally:
                process.show = False
            expected = eval(right, namespace)
            result["actual"], fingerprint = process.shown(actual)
            result["expected"] = _short(repr(expected))
            result["passed"] = bool(actual == expected)
            if not result["passed"]:
                result["error"] = "AssertionError"
                if isinstance(actual, Remote):
                    result["error"] = f"AssertionError: the program returned a {actual._type}, which is not plain data"
                result["reason"] = "wrong answer"
            if fingerprint:
                result["digest"] = fingerprint
        else:
            exec(compile(test, "<test>", "exec"), namespace)
            result["passed"] = True
    except BaseException as exc:  # noqa: BLE001 - a failing test, or the program's failure
        result.update(_failure(exc, limit))
    if process.dropped:
        result["output_dropped"] = process.dropped
    return result


def run_call(test, namespace, entry_point, limit, process):
    """Call the entry point with one plain-data argument list; the value returned, as plain-data JSON, and the
    call's own time."""
    result = {"passed": False}
    process.begin(limit)
    try:
        args = from_plain(json.loads(test))
        value = namespace[entry_point](*args)
        if isinstance(value, Remote):
            raise TypeError(f"a {value._type} is not plain data")
        result["actual"] = json.dumps(process.last[4]["value"])
        seconds = process.last[3]
        result["seconds"] = seconds if type(seconds) in (int, float) else None
        result["passed"] = True
    except BaseException as exc:  # noqa: BLE001
        result.update(_failure(exc, limit))
    return result


def run_stdio_test(case, index, limit, process, out_limit):
    """Run the program on one input; its printed output (the framework, which holds the expected output,
    compares)."""
    try:
        reply = process.stdio(index, case["input"], limit)
    except ProgramFailed as exc:
        return {"passed": False, **_failure(exc, limit)}
    result = {"passed": False}
    if reply.get("timeout") is True:
        result.update(error=f"Timed out after {limit:g} s", timed_out=True, reason="timeout")
    elif "raised" in reply:
        info = reply["raised"] if isinstance(reply["raised"], dict) else {}
        error = _text(info.get("error"), 300) or "error"
        result.update(error=error, traceback="\n".join(_lines(info.get("frames")) + [error]),
                      reason=_text(info.get("reason"), 40) or "error")
    output = _text(reply.get("output"))
    if output is None:
        return result
    dropped = max(reply.get("dropped"), 0) if type(reply.get("dropped")) is int else 0
    if len(output) > out_limit:  # no more than the program's process may keep
        output, dropped = output[:out_limit], dropped + len(output) - out_limit
    result["actual"] = _short(output, 2000)
    if dropped:
        result["output_dropped"] = dropped
        result.setdefault("reason", "output limit")
        result.setdefault("error", f"Output limit exceeded ({dropped} characters cut)")
    elif "error" not in result:
        result["output_full"] = output
    if len(output) > 2000 and not dropped:
        result["digest"] = printed_digest(output)
    return result


def run_traced(payload, index, namespace, process):
    """Run one test with the program's process recording its own frames; the events and the exception."""
    timeout = payload["timeout"]
    if payload["kind"] == "stdio":
        outcome = run_stdio_test(payload["tests"][index], index, timeout, process, _output_limit(payload))
    else:
        outcome = run_function_test(payload["tests"][index], namespace, timeout, process)
    if outcome.get("timed_out"):
        return {"trace": None, "error": f"Timed out after {timeout:g} s"}
    if not process.alive:
        return {"trace": None, "error": outcome.get("error") or "The program ended unexpectedly"}
    result = {"trace": process.events()}
    error = outcome.get("error")
    if error and not error.startswith("SystemExit") and outcome.get("reason") != "output limit":
        result["exception"] = error
    return result


def _output_limit(payload):
    return payload.get("output_limit", 1_000_000)


def _nondumpable():
    """No process of the same user may read this one's memory or descriptors (ptrace, /proc/PID/mem, fd)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        pass


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


def _reap(pids, within_s):
    """Wait for these killed children to be gone: on a loaded machine a killed process can take a while to die,
    and the run must not return while a program's process still runs."""
    deadline = time.monotonic() + within_s
    while pids and time.monotonic() < deadline:
        try:
            pid = os.waitpid(-1, os.WNOHANG)[0]
        except ChildProcessError:
            return
        if pid:
            pids.discard(pid)
        else:
            time.sleep(0.002)


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
        _reap(set(left), within_s=1.0)
    os._exit(status if status >= 0 else 128 - status)


def run_suite(payload, process, emit):
    """Run the payload's tests from ``start`` (or trace one), starting the program's process again after a test
    that killed it or hung."""
    tests, kind, timeout = payload["tests"], payload["kind"], payload["timeout"]
    timeouts = payload.get("timeouts") or []
    budget = payload.get("budget")
    deadline = None if budget is None else time.monotonic() + budget  # the whole run's, when the parent sets one

    def limit(i):
        own = timeouts[i] if i < len(timeouts) else timeout
        return own if deadline is None else min(own, deadline - time.monotonic())

    base = {"__name__": "__solution__", "__builtins__": builtins}
    names, trees = set(), []
    if kind != "stdio":
        try:
            exec(compile(payload.get("support") or "", "<support>", "exec"), base)
        except Exception as exc:  # noqa: BLE001 - the dataset's code: no verdict can stand without it
            emit({"setup_error": f"the tests' support code failed: {_error_line(exc)}", "reason": "error"})
            return
        entry = payload.get("entry_point")
        trees = [_parsed(t) for t in tests] if kind == "function" else []
        wanted = names_read(trees) | ({entry} if entry else set())
        names = {n for n in wanted if n not in base and not hasattr(builtins, n)}
    traced = payload.get("trace")
    indices = [traced] if traced is not None else range(payload.get("start", 0), len(tests))
    namespace = base
    for i in indices:
        if deadline is not None and traced is None and limit(i) <= 0:
            emit({"i": i, "passed": False, "error": "Not run: the run's time budget was spent", "timed_out": True,
                  "reason": "timeout"})
            continue
        if not process.alive:
            try:
                loaded = process.start(names, sum(limit(j) for j in range(i, len(tests))) + timeout + STARTUP_GRACE_S)
            except OSError as exc:
                loaded = {"setup_error": f"the program's process could not start: {exc}", "reason": "crash"}
            if "setup_error" in loaded:
                emit(loaded)
                return
            namespace = {**base, **loaded["names"]}
        if traced is not None:
            emit(run_traced(payload, i, namespace, process))
        elif kind == "stdio":
            emit({"i": i, **run_stdio_test(tests[i], i, limit(i), process, _output_limit(payload))})
        elif kind == "calls":
            emit({"i": i, **run_call(tests[i], namespace, payload["entry_point"], limit(i), process)})
        else:
            emit({"i": i, **run_function_test(tests[i], namespace, limit(i), process, trees[i])})


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--candidate":
        if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
            sys.path.pop(0)
        candidate_main()
        return
    # modules this process imports from here on come from the installation, never from the scratch folder,
    # where the program can write
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)
    if "--guard" in sys.argv:
        guard()
    if os.getuid() != 0:  # as root, the program runs as nobody: it cannot reach this process anyway
        _nondumpable()
    first = start_program_process(fresh=False)  # before any test is read: the fork holds none
    payload = json.loads(sys.stdin.read())
    results = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # what a test prints goes nowhere near the results
        os.dup2(devnull, fd)
    sys.stdout = sys.stderr = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")

    def emit(obj):
        results.write(json.dumps(obj) + "\n")
        results.flush()

    process = ProgramProcess(payload, first)
    try:
        run_suite(payload, process, emit)
    finally:
        process.close()


if __name__ == "__main__":
    main()
