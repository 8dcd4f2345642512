"""Compare broadcasting checkers on a bug corpus: ``python benchmarks/checker_compare.py --corpus DIR [--json OUT]``.

Why: ``bcast check`` is only worth having if it finds the bugs that real exports carry, names where
they are, stays silent on clean models, and does so more cheaply or more often than what people
already run. The corpus (``python -m benchmarks.corpus.build``) has runtime-proven bugs; this script
runs three tools on each of its models, each in a fresh subprocess so that the time and the peak
memory are per tool and per model:

1. bcast: ``bcast.check.check(path)``; a finding is any problem; it names the bug when a problem's
   ``nodes`` (or its ``node``) include one of the bug's ``expect_nodes``;
2. ONNX strict shape inference with data propagation,
   ``onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)``; a finding is an
   exception; it names the bug when the message names one of ``expect_nodes``;
3. onnxruntime's symbolic shape inference,
   ``SymbolicShapeInference.infer_shapes(model, auto_merge=False, guess_output_rank=False)``; a
   finding is an exception or a ``None`` result; named as for 2.
4. polygraphy's linter, ``polygraphy check lint MODEL -o REPORT`` (it needs ``onnx_graphsurgeon``); a
   finding is an entry of level ``exception`` or ``error`` in its report; it names the bug when an
   entry's ``nodes`` include one of ``expect_nodes``.

A bcast finding is a report that fails the gate (an error or a warning: ``info`` notes say how a
model may be called); its root is correct when the root (or the second root) of one of its problems
is one of the nodes or constants the bug's injection edited.

OpenVINO IR models are checked by bcast only (the others are "n/a"). A false positive is a clean
model with any finding. This is a benchmark, not a test: CI does not run it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

TOOLS = ("bcast", "onnx-strict", "ort-symbolic", "polygraphy-lint")
MARK = "@@RESULT@@ "


# ---- the worker: one tool on one model, in its own process ----------------------------------


def _worker(tool: str, path: str) -> dict[str, Any]:
    """Run ``tool`` on ``path``: whether it found something, and the node names / text it gave."""
    if tool == "bcast":
        from bcast.check import check

        try:
            report = check(path).to_dict()
        except Exception as exc:  # a crash is reported, not counted as a finding
            return {"finding": False, "crash": f"{type(exc).__name__}: {exc}"[:500], "nodes": [], "text": ""}
        problems = [p for p in report["problems"] if p["severity"] in ("error", "warning")]
        nodes = sorted({n for p in problems for n in (p.get("nodes") or [p["node"]])})
        # a problem with no root of its own begins at its node (what the finding is at is the edit)
        roots = sorted(
            {r["node"] for p in problems for r in (p["root"], p["also"]) if r}
            | {p["node"] for p in problems if not p["root"]}
        )
        text = " | ".join(f"{p['code']} {p['kind']} at {p['node']}: {p['message']}" for p in problems)[:2000]
        return {"finding": bool(problems), "nodes": nodes, "roots": roots, "text": text, "count": len(problems)}
    if tool == "polygraphy-lint":
        return _polygraphy(path)
    import onnx

    model = onnx.load(path)
    if tool == "onnx-strict":
        try:
            onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        except Exception as exc:
            return {"finding": True, "nodes": [], "text": f"{type(exc).__name__}: {exc}"[:2000]}
        return {"finding": False, "nodes": [], "text": ""}
    if tool == "ort-symbolic":
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        try:
            out = SymbolicShapeInference.infer_shapes(model, auto_merge=False, guess_output_rank=False)
        except Exception as exc:
            return {"finding": True, "nodes": [], "text": f"{type(exc).__name__}: {exc}"[:2000]}
        if out is None:
            return {"finding": True, "nodes": [], "text": "infer_shapes returned None"}
        return {"finding": False, "nodes": [], "text": ""}
    raise ValueError(tool)


def _polygraphy(path: str) -> dict[str, Any]:
    out = os.path.abspath("lint.json")
    exe = os.path.join(os.path.dirname(sys.executable), "polygraphy")
    subprocess.run([exe, "check", "lint", path, "-o", out], capture_output=True, text=True, check=False)
    try:
        with open(out) as f:
            report = json.load(f)
    except (OSError, ValueError) as exc:
        return {"finding": False, "crash": f"no lint report: {exc}"[:500], "nodes": [], "text": ""}
    bad = [e for e in report.get("lint_entries", []) if e.get("level") in ("exception", "error")]
    nodes = sorted({n for e in bad for n in e.get("nodes", [])})
    text = " | ".join(str(e.get("message", ""))[:300] for e in bad)[:2000]
    return {"finding": bool(bad), "nodes": nodes, "text": text, "count": len(bad)}


def _worker_main(tool: str, path: str) -> int:
    # the tools print freely (symbolic shape inference logs): keep stdout for the result line
    real = os.dup(1)
    os.dup2(2, 1)
    try:
        result = _worker(tool, path)
    finally:
        sys.stdout.flush()
        os.dup2(real, 1)
    print(MARK + json.dumps(result), flush=True)
    return 0


# ---- the driver ------------------------------------------------------------------------------


def run_tool(tool: str, path: str, timeout: float) -> dict[str, Any]:
    """``tool`` on ``path`` in a fresh Python: its result, wall time and peak RSS (that child's own)."""
    start = time.perf_counter()
    # onnxruntime's symbolic inference writes temporary files into the working directory: give it its own
    scratch = tempfile.mkdtemp(prefix="checker_compare_")
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--worker", tool, os.path.abspath(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=scratch,
    )
    deadline = start + timeout
    chunks: list[str] = []
    assert proc.stdout is not None
    stream = proc.stdout
    reader = threading.Thread(target=lambda: chunks.append(stream.read()), daemon=True)
    reader.start()
    timed_out = False
    while True:  # reap the child ourselves: wait4 gives this child's own rusage (peak RSS)
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if not timed_out and time.perf_counter() > deadline:
            timed_out = True
            proc.kill()
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(5)
    out = "".join(chunks)
    seconds = time.perf_counter() - start
    rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    for line in out.splitlines():
        if line.startswith(MARK):
            res = dict(json.loads(line[len(MARK) :]))
            break
    else:
        why = f"timed out after {timeout:g}s" if timed_out else f"exit {proc.returncode}, no result"
        res = {"finding": False, "nodes": [], "text": "", "crash": why}
    res.update(seconds=round(seconds, 3), rss_mb=round(rss_mb, 1))
    return res


_ONNX_NODE = re.compile(r"node name: ([^)]*)\)")


def named(tool: str, res: dict[str, Any], expect: list[str]) -> bool:
    """Whether a finding names one of the bug's expected nodes."""
    if not res.get("finding"):
        return False
    if tool in ("bcast", "polygraphy-lint"):
        return bool(set(expect) & set(res.get("nodes", [])))
    text = res.get("text", "")
    reported = {m.group(1).strip() for m in _ONNX_NODE.finditer(text)}
    return bool(reported & set(expect)) or any(e and e in text for e in expect)


def compare(
    corpora: list[str], timeout: float = 300.0, log: Any = print, tools: tuple[str, ...] = TOOLS
) -> dict[str, Any]:
    rows = []
    for corpus in corpora:
        with open(os.path.join(corpus, "manifest.json")) as f:
            manifest = json.load(f)
        for entry in manifest["models"]:
            path = os.path.join(corpus, entry["model"])
            row: dict[str, Any] = {"entry": {**entry, "model": os.path.join(corpus, entry["model"])}, "tools": {}}
            for tool in TOOLS:
                if tool not in tools or (tool != "bcast" and entry["format"] != "onnx"):
                    row["tools"][tool] = None
                    continue
                res = run_tool(tool, path, timeout)
                res["named"] = named(tool, res, entry["expect_nodes"]) if entry["bug"] else False
                res["rooted"] = (
                    bool(set(res.get("roots", [])) & set(entry.get("edited", []))) if entry["bug"] else False
                )
                row["tools"][tool] = res
            log(f"{entry['model']}: " + ", ".join(f"{t}={_mark(row['tools'][t], entry)}" for t in TOOLS))
            rows.append(row)
    return {"corpus": corpora, "rows": rows, "summary": summarise(rows)}


def _mark(res: dict[str, Any] | None, entry: dict[str, Any]) -> str:
    if res is None:
        return "n/a"
    if res.get("crash"):
        return "crash"
    if not entry["bug"]:
        return "FP" if res["finding"] else "ok"
    if res["named"]:
        return "found+node"
    return "found" if res["finding"] else "-"


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for tool in TOOLS:
        applicable = [r for r in rows if r["tools"][tool] is not None]
        bugs = [r for r in applicable if r["entry"]["bug"]]
        clean = [r for r in applicable if not r["entry"]["bug"]]
        out[tool] = {
            "bugs": len(bugs),
            "found": sum(bool(r["tools"][tool]["finding"]) for r in bugs),
            "named": sum(bool(r["tools"][tool]["named"]) for r in bugs),
            "rooted": sum(bool(r["tools"][tool].get("rooted")) for r in bugs),
            "clean": len(clean),
            "false_positives": sum(bool(r["tools"][tool]["finding"]) for r in clean),
            "crashes": sum(bool(r["tools"][tool].get("crash")) for r in applicable),
            "seconds": round(sum(r["tools"][tool]["seconds"] for r in applicable), 2),
            "peak_rss_mb": max((r["tools"][tool]["rss_mb"] for r in applicable), default=0.0),
            "not_applicable": len(rows) - len(applicable),
        }
    return out


def render(result: dict[str, Any]) -> str:
    s = result["summary"]
    lines = ["## Per tool", ""]
    lines.append(
        "| tool | bugs found | found, node named | root correct | clean models failed | crashes | total time (s) "
        "| peak RSS (MB) | models n/a |"
    )
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for tool in TOOLS:
        t = s[tool]
        rooted = f"{t['rooted']} / {t['bugs']}" if tool == "bcast" else "-"
        lines.append(
            f"| {tool} | {t['found']} / {t['bugs']} | {t['named']} / {t['bugs']} | {rooted} "
            f"| {t['false_positives']} / {t['clean']} | {t['crashes']} | {t['seconds']} | {t['peak_rss_mb']} "
            f"| {t['not_applicable']} |"
        )
    lines += ["", "## Per bug", "", "| model | bug | latent | " + " | ".join(TOOLS) + " |"]
    lines.append("| --- | --- | --- | " + " | ".join("---" for _ in TOOLS) + " |")
    for r in result["rows"]:
        e = r["entry"]
        if not e["bug"]:
            continue
        marks = " | ".join(_mark(r["tools"][t], e) for t in TOOLS)
        lines.append(f"| {e['model']} | {e['bug']} | {'yes' if e['latent'] else 'no'} | {marks} |")
    lines += ["", "## Clean models", "", "| model | " + " | ".join(TOOLS) + " |"]
    lines.append("| --- | " + " | ".join("---" for _ in TOOLS) + " |")
    for r in result["rows"]:
        e = r["entry"]
        if e["bug"]:
            continue
        lines.append(f"| {e['model']} | " + " | ".join(_mark(r["tools"][t], e) for t in TOOLS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return _worker_main(argv[1], argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--corpus", required=True, action="append", help="a corpus directory (with manifest.json); repeat it"
    )
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per tool per model")
    args = ap.parse_args(argv)
    tools = tuple(t for t in args.tools.split(",") if t)
    result = compare(args.corpus, args.timeout, log=lambda m: print(m, file=sys.stderr, flush=True), tools=tools)
    print(render(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
