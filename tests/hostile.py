"""Run one attack in a child process with a wall-clock timeout and an address-space limit;
count the work a call does.

A hang or a memory bomb in the code under test then fails the one test (the child is
killed, or its allocation fails) instead of stopping the whole run. Every hostile-input
test module (``tests/test_hostile_*.py``) runs its attacks through :func:`attack` or
:func:`command`; their assertions share :func:`assert_refused` and :func:`assert_clean_text`.
The children are forked from a warm parent that has imported NumPy, bcast and onnx once
(:class:`_Forker`: a fork costs milliseconds, a fresh interpreter importing them most of a
second); a child given its own environment or working directory, or a process where forking
is not to be had, starts a fresh interpreter. The timeout is a guard against a hang, never a
measure: no test asserts how long anything took. What a call costs is counted instead
(:func:`steps`: the Python lines it runs and the functions it calls), the same on a loaded
machine as on an idle one; :func:`assert_linear` counts it at three sizes, so that a square
(a loop over the input inside another) shows.

The child prints one JSON line describing what happened:

``{"outcome": "raised", "type": "BroadcastError", "bases": [...], "message": "..."}``
``{"outcome": "returned", "value": "<repr of the code's last expression, elided>"}``
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Default address-space limit of a child: enough for NumPy (and onnx) plus the data an
#: attack builds on purpose, far below the 24 GB of the machine.
MEMORY_BYTES = 3 << 30
#: Default wall-clock limit of a child, start-up included.
TIMEOUT_S = 30.0
#: The most a message may be (the contract: under 2 KB).
MESSAGE_BYTES = 2048

_CHILD = r"""
import json, sys
ns = {}
src = sys.argv[1]
try:
    *body, last = src.strip().split("\n")
    exec("\n".join(body), ns)
    try:
        value = eval(compile(last, "<attack>", "eval"), ns)
    except SyntaxError:
        exec(last, ns)
        value = None
    r = repr(value)
    out = {"outcome": "returned", "value": r if len(r) < 4000 else r[:2000] + "..." + r[-1000:]}
except BaseException as e:
    msg = str(e)
    out = {
        "outcome": "raised",
        "type": type(e).__name__,
        "bases": [c.__name__ for c in type(e).__mro__],
        "message": msg if len(msg) < 100_000 else msg[:50_000] + "<<cut by the harness>>",
        "message_bytes": len(msg.encode("utf-8", "backslashreplace")),
    }
sys.stdout.write("\n@@RESULT@@" + json.dumps(out) + "\n")
"""


@dataclass
class Outcome:
    """What a child did: returned a value or raised."""

    outcome: str  # "returned", "raised", "killed" (timeout), "crashed" (no result line)
    type: str = ""
    bases: tuple[str, ...] = ()
    message: str = ""
    message_bytes: int = 0
    value: str = ""
    stderr: str = ""
    returncode: int | None = None

    def __str__(self) -> str:
        if self.outcome == "raised":
            return f"raised {self.type}: {self.message[:600]!r} ({self.message_bytes} bytes)"
        if self.outcome == "returned":
            return f"returned {self.value[:600]}"
        return f"{self.outcome} (rc {self.returncode}): stderr {self.stderr[-1500:]!r}"


def _limits(memory: int | None) -> None:
    if memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("CI", None)  # a child never loads CI's hypothesis profile; nothing else reads it
    env["PYTHONFAULTHANDLER"] = "1"
    if extra:
        env.update(extra)
    return env


#: the warm parent: reads one job a line (JSON) on its stdin, forks a child for it, waits for the child
#: (killing its process group past the job's timeout) and answers one line: the exit status, or "killed"
_FORKER = r"""
import json, os, resource, runpy, signal, sys, time, traceback
import numpy, bcast, bcast.ops, bcast.cli, bcast.check
try:
    import onnx, bcast.check.checker
except ImportError:
    pass
if sys.argv[1:] == ["torch"]:
    import torch
jobs = os.fdopen(os.dup(0), "rb", buffering=0)
answers = os.fdopen(os.dup(1), "w", buffering=1)
devnull = os.open(os.devnull, os.O_RDONLY)
while True:
    line = jobs.readline()
    if not line:
        break
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.setpgid(0, 0)
            jobs.close()
            answers.close()
            out = os.open(job["out"], os.O_WRONLY)
            err = os.open(job["err"], os.O_WRONLY)
            os.dup2(devnull, 0)
            os.dup2(out, 1)
            os.dup2(err, 2)
            if job["memory"] is not None:
                resource.setrlimit(resource.RLIMIT_AS, (job["memory"], job["memory"]))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if job["kind"] == "attack":
                sys.argv = ["-c", job["code"]]
                exec(compile(job["child"], "<child>", "exec"), {"__name__": "__main__"})
                status = 0
            else:
                sys.argv = ["bcast", *job["args"]]
                try:
                    runpy.run_module("bcast", run_name="__main__", alter_sys=True)
                    status = 0
                except SystemExit as e:
                    if e.code is None or isinstance(e.code, int):
                        status = e.code or 0
                    else:
                        print(e.code, file=sys.stderr)
                        status = 1
        except BaseException:
            traceback.print_exc()
            status = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(status)
    deadline = time.monotonic() + job["timeout"]
    answer = None
    while answer is None:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            answer = {"returncode": os.waitstatus_to_exitcode(status)}
        elif time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
            answer = {"killed": True}
        else:
            time.sleep(0.002)
    answers.write(json.dumps(answer) + "\n")
"""


class _Forker:
    """A warm parent of the children (one per test process, started on first use); ``preload``: "torch"
    for the one whose children use PyTorch (importing it takes seconds, and maps 600 MiB that the other
    children are better without)."""

    def __init__(self, preload: str = "") -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.preload = preload
        self.broken = not hasattr(os, "fork")

    def run(self, job: dict[str, Any]) -> tuple[int | None, str, str] | None:
        """``job`` run in a forked child: (exit status or None if killed, stdout, stderr); None if the
        warm parent cannot be had (the caller then starts a fresh interpreter)."""
        if self.broken:
            return None
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _FORKER, *filter(None, [self.preload])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=_env(None),
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with tempfile.TemporaryDirectory() as tmp:
            out, err = Path(tmp) / "out", Path(tmp) / "err"
            out.touch()
            err.touch()
            try:
                self.proc.stdin.write((json.dumps({**job, "out": str(out), "err": str(err)}) + "\n").encode())
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            except OSError:
                line = b""
            if not line:  # the warm parent died: no more forks in this process
                self.broken = True
                return None
            answer = json.loads(line)
            text = out.read_bytes().decode("utf-8", "replace"), err.read_bytes().decode("utf-8", "replace")
        return (None if answer.get("killed") else answer["returncode"]), *text


_forker, _torch_forker = _Forker(), _Forker("torch")


def attack(
    code: str,
    *,
    timeout: float = TIMEOUT_S,
    memory: int | None = MEMORY_BYTES,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
) -> Outcome:
    """Run ``code`` (Python; its last line is an expression or a statement) in a limited child.

    A child still running after ``timeout`` seconds is killed: the outcome is "killed" (a hang).
    """
    forked = None
    if env is None and cwd is None:
        job = {"kind": "attack", "child": _CHILD, "code": code, "memory": memory, "timeout": timeout}
        forked = (_torch_forker if "torch" in code else _forker).run(job)
    if forked is not None:
        returncode, stdout, stderr = forked
        if returncode is None:
            return Outcome("killed", stderr=stderr)
    else:
        try:
            p = subprocess.run(
                [sys.executable, "-c", _CHILD, code],
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=lambda: _limits(memory),
                env=_env(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as e:
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            return Outcome("killed", stderr=err)
        returncode, stdout, stderr = p.returncode, p.stdout, p.stderr
    marker = stdout.rfind("@@RESULT@@")
    if marker < 0:
        return Outcome("crashed", stderr=stderr, returncode=returncode)
    data = json.loads(stdout[marker + len("@@RESULT@@") :])
    return Outcome(
        data["outcome"],
        type=data.get("type", ""),
        bases=tuple(data.get("bases", ())),
        message=data.get("message", ""),
        message_bytes=data.get("message_bytes", 0),
        value=data.get("value", ""),
        stderr=stderr,
        returncode=returncode,
    )


def assert_clean_text(text: str, what: str = "message") -> None:
    """No control character (ESC, BEL, NUL, CR, ...) other than newline and tab reaches a user."""
    bad = sorted({c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0})
    assert not bad, f"{what} holds raw control characters {bad!r}: {text[:300]!r}"


def assert_refused(
    out: Outcome,
    *,
    kinds: Sequence[str] = ("BroadcastError", "TypeError"),
    contains: Sequence[str] = (),
) -> None:
    """The child raised one of ``kinds`` (by class or base class) with a short, clean, telling message."""
    assert out.outcome == "raised", f"expected a refusal, got: {out}"
    assert any(k in out.bases for k in kinds), f"expected one of {list(kinds)}, got: {out}"
    assert out.type != "MemoryError" and out.type != "RecursionError", str(out)
    assert out.message.strip(), f"an empty message: {out}"
    assert out.message_bytes < MESSAGE_BYTES, f"a message of {out.message_bytes} bytes: {out}"
    assert_clean_text(out.message)
    for s in contains:
        assert s.lower() in out.message.lower(), f"the message should name {s!r}: {out}"


def assert_returned(out: Outcome) -> str:
    """The child returned (no exception); its value's repr."""
    assert out.outcome == "returned", f"expected a value, got: {out}"
    return out.value


@dataclass
class Run:
    """A finished ``bcast`` command: exit status and output."""

    returncode: int
    stdout: str
    stderr: str


def command(
    args: Sequence[str],
    *,
    timeout: float = TIMEOUT_S,
    memory: int | None = MEMORY_BYTES,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> Run:
    """Run ``python -m bcast ARGS`` in a limited child; a timeout (a hang) fails the calling test."""
    if env is None and cwd is None and stdin == subprocess.DEVNULL:
        forked = _forker.run({"kind": "command", "args": list(args), "memory": memory, "timeout": timeout})
        if forked is not None:
            returncode, out, err = forked
            if returncode is None:
                raise AssertionError(f"bcast {' '.join(args)[:300]} ran past {timeout} s (a hang)")
            return Run(returncode, out, err)
    try:
        p = subprocess.run(
            [sys.executable, "-m", "bcast", *args],
            capture_output=True,
            timeout=timeout,
            preexec_fn=lambda: _limits(memory),
            env=_env(env),
            cwd=cwd,
            stdin=stdin,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"bcast {' '.join(args)[:300]} ran past {timeout} s (a hang)") from None
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    return Run(p.returncode, out, err)


def assert_cli_refused(run: Run, *, contains: Sequence[str] = ()) -> None:
    """Bad input to the command: exit 2, one short clean line on stderr, no traceback."""
    assert run.returncode == 2, f"exit {run.returncode}; stdout {run.stdout[-500:]!r} stderr {run.stderr[-1500:]!r}"
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert len(run.stderr.encode()) < MESSAGE_BYTES, f"{len(run.stderr)} bytes on stderr: {run.stderr[:500]!r}"
    assert_clean_text(run.stderr, "stderr")
    assert_clean_text(run.stdout, "stdout")
    for s in contains:
        assert s.lower() in (run.stderr + run.stdout).lower(), f"should name {s!r}: {run.stderr!r}"


# -- counting work ---------------------------------------------------------------------------

#: the source of ``steps``, run here and in a child (``exec(STEPS_SOURCE)``): the same count in both
STEPS_SOURCE = r'''
def steps(fn, expected=()):
    """The work fn() does on this thread: the Python lines it runs and the functions, Python or C,
    it calls (calls, returns, lines and C calls, each event one). The same on every run of the
    same code, whatever the machine's load; the collector is off meanwhile (a collection would run
    finalizers that are no part of fn). An exception of one of the ``expected`` types ends fn quietly.
    """
    import gc as _gc, sys as _sys
    count = [0]

    def trace(frame, event, arg):
        count[0] += 1
        return trace

    def profile(frame, event, arg):
        if event == "c_call":
            count[0] += 1

    was_enabled = _gc.isenabled()
    old_trace, old_profile = _sys.gettrace(), _sys.getprofile()
    _gc.disable()
    _sys.setprofile(profile)
    _sys.settrace(trace)
    try:
        fn()
    except expected:
        pass
    finally:
        _sys.settrace(old_trace)
        _sys.setprofile(old_profile)
        if was_enabled:
            _gc.enable()
    return count[0]
'''
_namespace: dict[str, Any] = {}
exec(STEPS_SOURCE, _namespace)
#: see :data:`STEPS_SOURCE`
steps: Callable[..., int] = _namespace["steps"]


def python_calls(fn: Callable[[], object], name: str, filename: str) -> int:
    """How many times fn() calls the Python function ``name`` of the source file ``filename``: a compiled twin of a
    Python loop calls none of the steps that the loop calls, which counts show where timings cannot."""
    calls = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == name and frame.f_code.co_filename == filename:
            calls[0] += 1

    old = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(old)
    return calls[0]


def assert_grows_linearly(counts: Sequence[int], n: int, what: str = "") -> None:
    """``counts`` of steps at ``n``, ``2n`` and ``4n``: the second doubling adds at most 2.5 times what
    the first did (linear work plus a fixed part: twice; a square term: four times)."""
    first, second = counts[1] - counts[0], counts[2] - counts[1]
    shown = f"{what}: {counts[0]:,}, {counts[1]:,}, {counts[2]:,} steps at {n}, {2 * n}, {4 * n}"
    assert second <= 2.5 * max(first, 1), shown


def assert_linear(
    make: Callable[[int], Callable[[], object]],
    n: int,
    *,
    expected: tuple[type[BaseException], ...] = (),
    before: Callable[[], object] = lambda: None,
    what: str = "",
) -> list[int]:
    """``make(k)()`` costs about twice as many steps at ``2k`` as at ``k``, for ``k`` = ``n`` and ``2n``.

    The same code on the same input counts the same: there is no noise to allow for, and small
    sizes do. ``before()`` runs ahead of each count (to empty a cache); a first call, uncounted,
    imports what the call imports lazily. The counts at ``n``, ``2n`` and ``4n``.
    """
    before()
    steps(make(max(1, n // 4)), expected)
    counts = []
    for k in (n, 2 * n, 4 * n):
        fn = make(k)
        before()
        counts.append(steps(fn, expected))
    assert_grows_linearly(counts, n, what)
    return counts


def counted(
    setup: str, calls: Sequence[str], *, timeout: float = TIMEOUT_S, memory: int | None = MEMORY_BYTES
) -> list[int]:
    """The steps of each of ``calls`` (one-line Python expressions), counted in order in a limited
    child after ``setup`` has run; an exception ends a call, counted all the same. A child that
    hangs is killed after ``timeout`` seconds and fails the test."""
    counts = ", ".join(f"steps(lambda: {call}, (Exception,))" for call in calls)
    out = attack(f"{STEPS_SOURCE}\n{setup}\n[{counts}]", timeout=timeout, memory=memory)
    value = assert_returned(out)
    return [int(c) for c in value.strip("[]").split(",")]


def mutated(base: Any, least: int = 1, most: int = 4) -> Any:
    """A hypothesis strategy: the bytes ``base`` draws, edited ``least`` to ``most`` times (a byte set, up to 12
    bytes inserted or deleted, the tail cut): what a model file becomes when a download, a disk or a tool breaks
    it."""
    from hypothesis import strategies as st

    @st.composite
    def edit(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(base))
        for _ in range(draw(st.integers(least, most))):
            how = draw(st.sampled_from(["set", "insert", "delete", "truncate"]))
            at = draw(st.integers(0, max(len(data) - 1, 0)))
            if how == "set" and data:
                data[at] = draw(st.integers(0, 255))
            elif how == "insert":
                data[at:at] = draw(st.binary(min_size=1, max_size=12))
            elif how == "delete":
                del data[at : at + draw(st.integers(1, 12))]
            else:
                del data[at:]
        return bytes(data)

    return edit()
