"""Build the broadcasting-bug corpus: ``python -m benchmarks.corpus.build --out DIR [--small]``.

Why: to measure ``bcast check`` (and compare it with other tools) on real exported models whose
bugs are proven by a runtime, rebuilt from scratch on any machine, offline, in minutes.

Steps: export each tiny model (:mod:`.models`) with both exporters (:mod:`.export`), inject every
bug class into every export (:mod:`.bugs`), keep the candidates onnxruntime rejects
(:mod:`.prove`), convert some clean models to OpenVINO IR and inject IR bugs (:mod:`.ir`), and write
``DIR/manifest.json``: one entry per file, clean ones with ``bug: null``.

``--small`` builds the kept set of ``tests/data/corpus`` (a fixed choice of models and bug classes,
about 20 ONNX bugs, 3 clean ONNX models and 2 IRs with their bugs, a few MB); the full corpus tries
every bug class on every export (a few hundred files, a few minutes).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import sys
import time
from typing import Any

import onnx

from .bugs import BUGS, BugClass, Injection, candidates, get_bug
from .export import EXPORTERS, export
from .models import SPECS, ModelSpec, get_spec
from .prove import Proof, ort_run, prove

#: the kept set: (model, exporter) -> the bug classes (keys) to inject into it
SMALL: dict[tuple[str, str], tuple[str, ...]] = {
    ("bert", "torchscript"): (
        "transposed-bias",
        "mask-wrong-axis",
        "fixed-position-length",
        "expand-wrong-axis",
        "reshape-wrong-heads",
    ),
    ("gpt2", "dynamo"): ("layernorm-wrong-length", "mask-gathernd", "matmul-batch-clash", "mask-wrong-axis-batch"),
    ("llama", "torchscript"): ("concat-wrong-axis", "batch-one-constant", "layernorm-wrong-length"),
    ("distilbert", "dynamo"): ("reshaped-bias", "fixed-position-length", "batch-one-constant"),
    ("vit", "torchscript"): ("position-table-length", "reshape-wrong-heads"),
    ("whisper_encoder", "dynamo"): ("conv-stride-mismatch", "transposed-bias"),
    ("resnet", "torchscript"): ("conv-stride-mismatch",),
    ("wav2vec2", "torchscript"): ("slice-off-by-one",),
}
#: clean models kept in the small set (besides the IR sources)
SMALL_CLEAN = (("bert", "torchscript"), ("gpt2", "dynamo"), ("resnet", "torchscript"))
#: clean ONNX exports converted to OpenVINO IR: all of them in the full corpus, these in the small one
SMALL_IR = (("bert", "torchscript"), ("resnet", "torchscript"))


def slim(model: onnx.ModelProto) -> None:
    """Drop the dynamo exporter's per-node metadata (stack traces, module paths) and doc strings.

    Why: they are half of a dynamo file's bytes and say nothing about shapes; node names, value_info
    and everything else stay exactly as the exporter wrote them.
    """
    for n in model.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    del model.metadata_props[:]
    model.doc_string = ""


def _entry(rel: str, spec: ModelSpec, exporter: str, **kw: Any) -> dict[str, Any]:
    return {
        "model": rel,
        "format": kw.pop("format", "onnx"),
        "exporter": exporter,
        "arch": spec.arch,
        "source": spec.name,
        "inputs": {k: list(v) for k, v in spec.inputs.items()},
        "dtypes": dict(spec.dtypes),
        "bug": None,
        "description": None,
        "edited": [],
        "expect_nodes": [],
        "latent": False,
        "fails": None,
        "passes": dict(spec.sizes),
        "runtime_error": None,
        **kw,
    }


def _bug_entry(rel: str, spec: ModelSpec, exporter: str, inj: Injection, proof: Proof) -> dict[str, Any]:
    expect = list(inj.expect_nodes)
    if proof.node and proof.node not in expect:
        expect.append(proof.node)
    return _entry(
        rel,
        spec,
        exporter,
        bug=inj.bug,
        description=inj.description,
        edited=inj.edited,
        expect_nodes=expect,
        latent=proof.latent,
        fails=inj.fails,
        passes=inj.passes if proof.latent else None,
        runtime_error=(proof.error or "")[:300],
        runtime_node=proof.node,
        check_model=proof.checker or "ok",
        ort_loads=proof.loads,
    )


def _inject(
    clean: onnx.ModelProto, spec: ModelSpec, exporter: str, bugs: list[BugClass], out: str, log: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every bug class of ``bugs`` into ``clean``: proven entries, and the classes that found none."""

    @functools.cache
    def runs(items: tuple[tuple[str, int], ...]) -> bool:
        return ort_run(clean, spec, dict(items)) is None

    def clean_runs(sizes: dict[str, int]) -> bool:
        return runs(tuple(sorted(sizes.items())))

    entries, discarded = [], []
    for bug in bugs:
        reasons = []
        chosen: tuple[Injection, Proof] | None = None
        for inj in candidates(clean, spec, bug):
            proof = prove(inj, spec, clean_runs, must_be_latent=bug.must_be_latent, fail_ops=bug.fail_ops)
            if not proof.ok:
                reasons.append(f"{inj.edited[-1] if inj.edited else '?'}: {proof.why}")
                continue
            if chosen is None:
                chosen = (inj, proof)
            if proof.loads:  # prefer a bug that onnxruntime loads and trips over only when running
                chosen = (inj, proof)
                break
        if chosen is None:
            why = "; ".join(reasons[:3]) if reasons else "no site in this graph"
            discarded.append({"model": f"{spec.name}.{exporter}", "bug": bug.key, "why": why[:300]})
            if reasons:
                log(f"    {bug.key}: not proven ({why[:120]})")
            continue
        inj, proof = chosen
        assert inj.model is not None
        rel = f"onnx/{spec.name}.{exporter}.{bug.key}.onnx"
        onnx.save(inj.model, os.path.join(out, rel))
        entries.append(_bug_entry(rel, spec, exporter, inj, proof))
        loads = "" if proof.loads else ", onnxruntime refuses to load it"
        log(f"    {bug.key}: proven at {proof.node}{' (latent)' if proof.latent else ''}{loads}")
    return entries, discarded


def write_manifest(out: str, manifest: dict[str, Any]) -> None:
    """``manifest`` as ``out/manifest.json``: the one form every corpus builder writes."""
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def build(out: str, *, small: bool, log: Any = print) -> dict[str, Any]:
    """Build the corpus into ``out`` (emptied first) and return its manifest."""
    start = time.perf_counter()
    if os.path.isdir(out):
        for sub in ("onnx", "openvino", "manifest.json"):
            p = os.path.join(out, sub)
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    scratch = os.path.join(out, ".export")
    every = [(s.name, e) for s in SPECS for e in EXPORTERS]
    wanted = sorted({*SMALL, *SMALL_CLEAN, *SMALL_IR}) if small else every
    entries: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    discarded: list[dict[str, Any]] = []
    cleans: dict[tuple[str, str], str] = {}
    for name, exporter in wanted:
        spec = get_spec(name)
        res = export(spec, exporter, scratch)
        if res.path is None:
            failures.append({"model": name, "exporter": exporter, "error": res.error})
            log(f"{name} ({exporter}): export failed: {(res.error or '')[:150]}")
            continue
        log(f"{name} ({exporter}): exported in {res.seconds:.1f}s")
        model = onnx.load(res.path)
        slim(model)
        clean_rel = f"onnx/{name}.{exporter}.onnx"
        keep_clean = not small or (name, exporter) in SMALL_CLEAN
        if keep_clean:
            onnx.save(model, os.path.join(out, clean_rel))
            entries.append(_entry(clean_rel, spec, exporter, check_model="ok"))
        cleans[(name, exporter)] = res.path
        bugs = [get_bug(k) for k in SMALL.get((name, exporter), ())] if small else list(BUGS)
        got, lost = _inject(model, spec, exporter, bugs, out, log)
        entries.extend(got)
        discarded.extend(lost)

    from .ir import build_ir

    # the IR sources: TorchScript exports (OpenVINO converts them to the most familiar IR)
    ir_sources = [s for s in SMALL_IR if s in cleans] if small else sorted(k for k in cleans if k[1] == "torchscript")
    ir_entries, ir_lost = build_ir([(get_spec(n), e, cleans[(n, e)]) for n, e in ir_sources], out, small=small, log=log)
    entries.extend(ir_entries)
    discarded.extend(ir_lost)
    shutil.rmtree(scratch, ignore_errors=True)

    import onnxruntime
    import openvino
    import torch
    import transformers

    manifest = {
        "version": 1,
        "kind": "small" if small else "full",
        "built_by": "python -m benchmarks.corpus.build" + (" --small" if small else ""),
        "tools": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
            "openvino": openvino.__version__,
        },
        "seconds": round(time.perf_counter() - start, 1),
        "models": entries,
        "export_failures": failures,
        "not_proven": discarded,
    }
    write_manifest(out, manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to (re)build the corpus in")
    ap.add_argument("--small", action="store_true", help="the small kept set (tests/data/corpus)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    m = build(args.out, small=args.small, log=log)
    bugs = [e for e in m["models"] if e["bug"]]
    clean = [e for e in m["models"] if not e["bug"]]
    print(
        f"{args.out}: {len(bugs)} proven bugs ({sum(e['latent'] for e in bugs)} latent), {len(clean)} clean models, "
        f"{len(m['export_failures'])} export failures, {len(m['not_proven'])} bug classes not proven, "
        f"in {m['seconds']}s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
