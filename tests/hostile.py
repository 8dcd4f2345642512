"""Run one attack in a child process with a wall-clock timeout and an address-space limit.

A hang or a memory bomb in the code under test then fails the one test (the child is
killed, or its allocation fails) instead of stopping the whole run. Every hostile-input
test module (``tests/test_hostile_*.py``) runs its attacks through :func:`attack` or
:func:`command`; their assertions share :func:`assert_refused` and :func:`assert_clean_text`.

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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Default address-space limit of a child: enough for NumPy (and onnx) plus the data an
#: attack builds on purpose, far below the 24 GB of the machine.
MEMORY_BYTES = 3 << 30
#: Default wall-clock limit of a child, start-up included.
TIMEOUT_S = 30.0
#: The most a message may be (the contract: under 2 KB).
MESSAGE_BYTES = 2048

_CHILD = r"""
import json, sys, time
ns = {}
src = sys.argv[1]
t0 = time.perf_counter()
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
out["seconds"] = time.perf_counter() - t0
sys.stdout.write("\n@@RESULT@@" + json.dumps(out) + "\n")
"""


@dataclass
class Outcome:
    """What a child did: returned a value or raised, and how long it took."""

    outcome: str  # "returned", "raised", "killed" (timeout), "crashed" (no result line)
    type: str = ""
    bases: tuple[str, ...] = ()
    message: str = ""
    message_bytes: int = 0
    value: str = ""
    seconds: float = 0.0
    stderr: str = ""
    returncode: int | None = None

    def __str__(self) -> str:
        if self.outcome == "raised":
            return f"raised {self.type}: {self.message[:600]!r} ({self.message_bytes} bytes, {self.seconds:.2f} s)"
        if self.outcome == "returned":
            return f"returned {self.value[:600]} ({self.seconds:.2f} s)"
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


def attack(
    code: str,
    *,
    timeout: float = TIMEOUT_S,
    memory: int | None = MEMORY_BYTES,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
) -> Outcome:
    """Run ``code`` (Python; its last line is an expression or a statement) in a limited child."""
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
        return Outcome("killed", stderr=err, seconds=timeout)
    marker = p.stdout.rfind("@@RESULT@@")
    if marker < 0:
        return Outcome("crashed", stderr=p.stderr, returncode=p.returncode)
    data = json.loads(p.stdout[marker + len("@@RESULT@@") :])
    return Outcome(
        data["outcome"],
        type=data.get("type", ""),
        bases=tuple(data.get("bases", ())),
        message=data.get("message", ""),
        message_bytes=data.get("message_bytes", 0),
        value=data.get("value", ""),
        seconds=data["seconds"],
        stderr=p.stderr,
        returncode=p.returncode,
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
    seconds: float = 5.0,
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
    assert out.seconds < seconds, f"took {out.seconds:.2f} s (limit {seconds} s): {out}"


def assert_returned(out: Outcome, *, seconds: float = 5.0) -> str:
    """The child returned (no exception) within ``seconds``; its value's repr."""
    assert out.outcome == "returned", f"expected a value, got: {out}"
    assert out.seconds < seconds, f"took {out.seconds:.2f} s (limit {seconds} s): {out}"
    return out.value


@dataclass
class Run:
    """A finished ``bcast`` command: exit status, output, and the time it took."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float


def command(
    args: Sequence[str],
    *,
    timeout: float = TIMEOUT_S,
    memory: int | None = MEMORY_BYTES,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> Run:
    """Run ``python -m bcast ARGS`` in a limited child; a timeout fails the calling test."""
    t0 = time.perf_counter()
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
    return Run(p.returncode, out, err, time.perf_counter() - t0)


def assert_cli_refused(run: Run, *, contains: Sequence[str] = ()) -> None:
    """Bad input to the command: exit 2, one short clean line on stderr, no traceback."""
    assert run.returncode == 2, f"exit {run.returncode}; stdout {run.stdout[-500:]!r} stderr {run.stderr[-1500:]!r}"
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert len(run.stderr.encode()) < MESSAGE_BYTES, f"{len(run.stderr)} bytes on stderr: {run.stderr[:500]!r}"
    assert_clean_text(run.stderr, "stderr")
    assert_clean_text(run.stdout, "stdout")
    for s in contains:
        assert s.lower() in (run.stderr + run.stdout).lower(), f"should name {s!r}: {run.stderr!r}"
