"""The "others" family of the corpus: models from exporters other than PyTorch's own.

Run from the repository root with the torch venv::

    python -m benchmarks.corpus.others --out /work/families/others

Why: every other family of the corpus comes from ``torch.onnx``; real users also check scikit-learn
pipelines (skl2onnx: ``ai.onnx.ml`` operators, an anonymous batch dim, ZipMap outputs), Ultralytics
YOLO detectors exported by Ultralytics' own exporter, and Keras models converted by tf2onnx. A shape
checker must stay quiet on the clean ones and find the proven bugs.

What it builds (into ``OUT/onnx`` and ``OUT/manifest.json``, entries in the format of ``build.py``):

* skl2onnx: StandardScaler+LogisticRegression (the ``Scaler`` operator, and Sub/Div with the
  ``div`` option), PCA+SVC, a small RandomForest, an MLPClassifier, all with a dynamic batch; and two
  bugs: the Sub's offset initializer and the ``Scaler`` operator's ``offset`` attribute edited to the
  wrong length (a definite clash, proven by onnxruntime).
* Ultralytics YOLOv8n and YOLO11n built from their yaml configs (random weights, nc=2), exported with
  ``dynamic=True`` (clean); and the bug "a YOLO exported at one size and made dynamic afterwards":
  exported with ``dynamic=False`` at 64x64, its inputs' and outputs' dims rewritten to symbols with
  ``onnx.tools.update_model_dims`` (value_info dropped). Its Reshape targets are constants that fit
  64x64 only: onnxruntime fails at 96x96 at a Reshape and runs at 64x64 (a latent bug).
* Keras models via tf2onnx (``keras_models.py``), run in the TensorFlow venv as a subprocess when
  that venv exists (else skipped, and said so).

Every model is then checked with ``python -m bcast check --json``; its entry gets a ``bcast`` key
(exit code, problem kinds, severities, nodes, first message, and whether an expected node was named).

The registry's torchvision is a CUDA build that cannot load with the CPU torch (``import torchvision``
raises "operator torchvision::nms does not exist"); Ultralytics imports it but needs none of it to
build and export a detector, so when it does not import, a stub ``torchvision`` module (whose
``ops.nms`` raises) is put in ``sys.modules`` before Ultralytics is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from .build import write_manifest

TF_PYTHON = "/work/tfvenv/bin/python"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
Log = Callable[[str], None]


# ----------------------------------------------------------------------------------------------- onnxruntime


def _session(model: onnx.ModelProto) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def feeds(inputs: dict[str, list[str | int]], dtypes: dict[str, str], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """Random inputs with the symbolic axes of ``inputs`` set to ``sizes``."""
    rng = np.random.default_rng(0)
    return {
        n: rng.standard_normal(tuple(sizes[a] if isinstance(a, str) else a for a in axes)).astype(dtypes[n])
        for n, axes in inputs.items()
    }


def ort_error(model: onnx.ModelProto, entry: dict[str, Any], sizes: dict[str, int]) -> tuple[bool, str | None]:
    """(whether onnxruntime loads ``model``, the error of loading or running it at ``sizes``, or None)."""
    try:
        sess = _session(model)
    except Exception as exc:
        return False, " ".join(f"{type(exc).__name__}: {exc}".split())
    try:
        sess.run(None, feeds(entry["inputs"], entry["dtypes"], sizes))
    except Exception as exc:
        return True, " ".join(f"{type(exc).__name__}: {exc}".split())
    return True, None


def error_node(message: str) -> str | None:
    """The node onnxruntime names in an error message, if any."""
    for pat in (r"Name:'([^']*)'", r"node name: ([^)\n]+)\)", r"Node \(([^)]+)\)", r"node \(([^)]+)\)"):
        m = re.search(pat, message)
        if m:
            return m.group(1).strip()
    return None


def checker(model: onnx.ModelProto) -> str:
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        return " ".join(str(exc).split())[:300]
    return "ok"


def entry(rel: str, exporter: str, arch: str, source: str, inputs: dict[str, list[str | int]], **kw: Any) -> dict:
    """A manifest entry in the format of ``build.py`` (clean unless ``bug`` is given)."""
    return {
        "model": rel,
        "format": "onnx",
        "exporter": exporter,
        "arch": arch,
        "source": source,
        "inputs": inputs,
        "dtypes": {n: "float32" for n in inputs},
        "bug": None,
        "description": None,
        "edited": [],
        "expect_nodes": [],
        "latent": False,
        "fails": None,
        "passes": None,
        "runtime_error": None,
        **kw,
    }


def prove_clean(model: onnx.ModelProto, e: dict[str, Any], sizes: list[dict[str, int]]) -> str | None:
    """None when onnxruntime runs ``model`` at every one of ``sizes``, else the first error."""
    for s in sizes:
        _, err = ort_error(model, e, s)
        if err:
            return f"at {s}: {err}"
    return None


def prove_bug(
    model: onnx.ModelProto, e: dict[str, Any], fails: dict[str, int], passes: dict[str, int] | None, ops: set[str]
) -> str | None:
    """Fill ``e`` with onnxruntime's proof: None when ``model`` fails at ``fails`` at one of ``ops`` (and runs
    at ``passes`` if given: a latent bug), else why it is not proven."""
    loads, err = ort_error(model, e, fails)
    if err is None:
        return f"runs at {fails}"
    node = error_node(err)
    kinds = {n.name: n.op_type for n in model.graph.node}
    # refused at load by the kernel of the edited node, whose name the message leaves out
    edited = e["edited"][0] if len(e["edited"]) == 1 else ""
    if node is None and not loads and kinds.get(edited) in ops and kinds[edited].lower() in err.lower():
        node = edited
    if kinds.get(node or "") not in ops:
        return f"fails at {node} ({kinds.get(node or '')}), not at {sorted(ops)}: {err[:200]}"
    if passes is not None and ort_error(model, e, passes)[1] is not None:
        return f"fails at {passes} too, not latent"
    e.update(
        fails=fails,
        passes=passes,
        latent=passes is not None,
        runtime_error=err[:300],
        runtime_node=node,
        ort_loads=loads,
        check_model=checker(model),
    )
    if node and node not in e["expect_nodes"]:
        e["expect_nodes"].append(node)
    return None


# ----------------------------------------------------------------------------------------------- skl2onnx


def build_sklearn(out: str, log: Log) -> tuple[list[dict], list[dict], list[dict]]:
    """Tiny scikit-learn pipelines through skl2onnx (clean), and two scaler bugs."""
    import warnings

    import skl2onnx
    from sklearn.datasets import make_classification
    from sklearn.decomposition import PCA
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    x, y = make_classification(80, 6, n_informative=4, n_redundant=0, n_classes=3, random_state=0)
    x = x.astype(np.float32)
    pipes: dict[str, tuple[str, Any, dict[Any, Any] | None]] = {
        "sk_scaler_logreg": ("scaler+logistic-regression", make_pipeline(StandardScaler(), LogisticRegression()), None),
        "sk_scaler_div_logreg": (
            "scaler+logistic-regression",
            make_pipeline(StandardScaler(), LogisticRegression()),
            {StandardScaler: {"div": "div"}},
        ),
        "sk_pca_svc": ("pca+svc", make_pipeline(PCA(3), SVC(probability=True, random_state=0)), None),
        "sk_random_forest": (
            "random-forest",
            RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0),
            {RandomForestClassifier: {"zipmap": False}},
        ),
        "sk_mlp": (
            "mlp",
            make_pipeline(StandardScaler(), MLPClassifier((8,), max_iter=300, random_state=0)),
            {MLPClassifier: {"zipmap": False}},
        ),
    }
    entries, failures, lost = [], [], []
    inputs: dict[str, list[str | int]] = {"X": ["batch", x.shape[1]]}
    sizes = [{"batch": 1}, {"batch": 7}]
    protos: dict[str, onnx.ModelProto] = {}
    for name, (arch, model, options) in pipes.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(x, y)
                proto = skl2onnx.to_onnx(model, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})
        except Exception as exc:
            failures.append({"model": name, "exporter": "skl2onnx", "error": f"{type(exc).__name__}: {exc}"[:300]})
            log(f"{name}: conversion failed: {exc}")
            continue
        rel = f"onnx/{name}.skl2onnx.onnx"
        e = entry(rel, "skl2onnx", arch, "scikit-learn", inputs, passes=sizes[0], ort_runs=sizes)
        err = prove_clean(proto, e, sizes)
        if err:
            lost.append({"model": name, "bug": None, "why": f"clean model does not run {err}"[:300]})
            log(f"{name}: clean model does not run {err[:200]}")
            continue
        e["check_model"] = checker(proto)
        onnx.save(proto, os.path.join(out, rel))
        entries.append(e)
        protos[name] = proto
        log(f"{name}: clean, runs at {sizes}")

    # bug 1: the Sub's offset initializer one element short
    if "sk_scaler_div_logreg" in protos:
        m = onnx.ModelProto()
        m.CopyFrom(protos["sk_scaler_div_logreg"])
        sub = next(n for n in m.graph.node if n.op_type == "Sub")
        init = next(i for i in m.graph.initializer if i.name == sub.input[1])
        arr = onnx.numpy_helper.to_array(init)
        init.CopyFrom(onnx.numpy_helper.from_array(arr[:-1].copy(), init.name))
        rel = "onnx/sk_scaler_div_logreg.skl2onnx.scaler-offset-wrong-length.onnx"
        e = entry(
            rel,
            "skl2onnx",
            "scaler+logistic-regression",
            "scikit-learn",
            inputs,
            bug="scaler-offset-wrong-length",
            description=f"the StandardScaler's offset initializer {init.name} has {arr.size - 1} elements for "
            f"{arr.size} features: Sub [batch,{arr.size}] - [{arr.size - 1}] cannot broadcast",
            edited=[sub.name],
            expect_nodes=[sub.name],
        )
        why = prove_bug(m, e, {"batch": 3}, None, {"Sub"})
        if why:
            lost.append({"model": "sk_scaler_div_logreg", "bug": e["bug"], "why": why[:300]})
        else:
            onnx.save(m, os.path.join(out, rel))
            entries.append(e)
            log(f"sk_scaler_div_logreg: {e['bug']} proven at {e['runtime_node']}")

    # bug 2: the ai.onnx.ml Scaler operator's offset attribute one element short
    if "sk_scaler_logreg" in protos:
        m = onnx.ModelProto()
        m.CopyFrom(protos["sk_scaler_logreg"])
        node = next(n for n in m.graph.node if n.op_type == "Scaler")
        attr = next(a for a in node.attribute if a.name == "offset")
        k = len(attr.floats)
        del attr.floats[-1]
        rel = "onnx/sk_scaler_logreg.skl2onnx.scaler-attr-wrong-length.onnx"
        e = entry(
            rel,
            "skl2onnx",
            "scaler+logistic-regression",
            "scikit-learn",
            inputs,
            bug="scaler-attr-wrong-length",
            description=f"the ai.onnx.ml Scaler {node.name}'s offset attribute has {k - 1} values for {k} features",
            edited=[node.name],
            expect_nodes=[node.name],
        )
        why = prove_bug(m, e, {"batch": 3}, None, {"Scaler"})
        if why:
            lost.append({"model": "sk_scaler_logreg", "bug": e["bug"], "why": why[:300]})
            log(f"sk_scaler_logreg: scaler-attr-wrong-length not proven: {why[:200]}")
        else:
            onnx.save(m, os.path.join(out, rel))
            entries.append(e)
            log(f"sk_scaler_logreg: {e['bug']} proven at {e['runtime_node']}")
    return entries, failures, lost


# ----------------------------------------------------------------------------------------------- Ultralytics


def _torchvision_or_stub(log: Log) -> str:
    """Import torchvision, or put a stub in ``sys.modules`` when it cannot load (see the module docstring)."""
    try:
        import torchvision  # noqa: F401

        return "torchvision"
    except Exception as exc:
        for k in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
            del sys.modules[k]

        def nms(*args: Any, **kw: Any) -> Any:
            raise NotImplementedError("torchvision stub: nms is not available (the export does not need it)")

        tv = types.ModuleType("torchvision")
        ops = types.ModuleType("torchvision.ops")
        ops.nms = nms  # type: ignore[attr-defined]
        tv.ops = ops  # type: ignore[attr-defined]
        tv.__version__ = "0.0.0+stub"  # type: ignore[attr-defined]
        sys.modules["torchvision"] = tv
        sys.modules["torchvision.ops"] = ops
        log(f"torchvision does not import ({str(exc)[:80]}): using a stub torchvision module")
        return "stub"


def _yolo_export(cfg: str, scratch: str, dynamic: bool) -> onnx.ModelProto:
    """Build ``cfg`` (e.g. yolov8n.yaml) from its config with nc=2 and random weights; export it to ONNX at 64x64."""
    import yaml
    from ultralytics import YOLO
    from ultralytics.nn.tasks import yaml_model_load

    d = yaml_model_load(cfg)
    d["nc"] = 2
    d = {k: v for k, v in d.items() if k not in ("yaml_file", "scale")}
    stem = cfg.replace(".yaml", "-nc2")
    path = os.path.join(scratch, f"{stem}.yaml")  # the file name keeps the scale letter ("n") that YOLO reads
    with open(path, "w") as f:
        yaml.safe_dump(d, f)
    cwd = os.getcwd()
    os.chdir(scratch)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            model = YOLO(path)
            exported = model.export(format="onnx", dynamic=dynamic, imgsz=64, simplify=False, opset=17)
    finally:
        os.chdir(cwd)
    exported = os.path.join(scratch, str(exported))  # relative to the scratch dir it was exported in
    proto = onnx.load(exported)
    os.remove(exported)
    return proto


def build_yolo(out: str, log: Log) -> tuple[list[dict], list[dict], list[dict], dict[str, str]]:
    """YOLOv8n and YOLO11n exported dynamic (clean), and exported fixed then made dynamic (the bug)."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    os.environ.setdefault("YOLO_AUTOINSTALL", "false")
    os.environ.setdefault("YOLO_VERBOSE", "false")
    tv = _torchvision_or_stub(log)
    try:
        import ultralytics
    except Exception as exc:
        log(f"ultralytics does not import: {exc}")
        return [], [{"model": "yolo", "exporter": "ultralytics", "error": str(exc)[:300]}], [], {}
    from onnx.tools.update_model_dims import update_inputs_outputs_dims

    scratch = os.path.join(out, ".yolo")
    os.makedirs(scratch, exist_ok=True)
    inputs: dict[str, list[str | int]] = {"images": ["batch", 3, "height", "width"]}
    entries, failures, lost = [], [], []
    for cfg in ("yolov8n.yaml", "yolo11n.yaml"):
        name = cfg.removesuffix(".yaml")
        # clean: exported dynamic by Ultralytics
        try:
            proto = _yolo_export(cfg, scratch, dynamic=True)
        except Exception as exc:
            failures.append({"model": name, "exporter": "ultralytics", "error": f"{type(exc).__name__}: {exc}"[:300]})
            log(f"{name}: export failed: {exc}")
            continue
        runs = [{"batch": 1, "height": 64, "width": 64}, {"batch": 2, "height": 96, "width": 128}]
        rel = f"onnx/{name}.ultralytics.onnx"
        e = entry(rel, "ultralytics", "yolo", "ultralytics", inputs, passes=runs[0], ort_runs=runs)
        err = prove_clean(proto, e, runs)
        if err:
            lost.append({"model": name, "bug": None, "why": f"clean model does not run {err}"[:300]})
            log(f"{name}: clean model does not run {err[:200]}")
        else:
            # the detector needs sizes that are multiples of 32 (its FPN Concats): record where it fails
            odd = {"batch": 1, "height": 33, "width": 33}
            _, oerr = ort_error(proto, e, odd)
            fails_at = {"sizes": odd, "error": (oerr or "")[:300]} if oerr else None
            e.update(check_model=checker(proto), ort_fails_at=fails_at)
            onnx.save(proto, os.path.join(out, rel))
            entries.append(e)
            log(f"{name}: clean, runs at {runs}{'; fails at 33x33 (sizes must be multiples of 32)' if oerr else ''}")
        # the bug: exported at 64x64, made dynamic afterwards
        try:
            fixed = _yolo_export(cfg, scratch, dynamic=False)
        except Exception as exc:
            failures.append({"model": f"{name} (fixed)", "exporter": "ultralytics", "error": str(exc)[:300]})
            continue
        out_name = fixed.graph.output[0].name
        out_dims: list[str | int] = ["batch", fixed.graph.output[0].type.tensor_type.shape.dim[1].dim_value, "anchors"]
        made = update_inputs_outputs_dims(fixed, {"images": inputs["images"]}, {out_name: out_dims})
        del made.graph.value_info[:]
        rel = f"onnx/{name}.ultralytics.fixed-reshape-made-dynamic.onnx"
        reshapes = [n.name for n in made.graph.node if n.op_type == "Reshape"]
        e = entry(
            rel,
            "ultralytics",
            "yolo",
            "ultralytics",
            inputs,
            bug="fixed-reshape-made-dynamic",
            description="exported with dynamic=False at 64x64, then the inputs' and outputs' dims were rewritten to "
            "symbols (onnx.tools.update_model_dims) and value_info dropped: the Reshape targets (and the anchor "
            "tables) are constants that fit a 1x3x64x64 input only",
            edited=["images", out_name],
            expect_nodes=[],
        )
        why = prove_bug(
            made, e, {"batch": 1, "height": 96, "width": 96}, {"batch": 1, "height": 64, "width": 64}, {"Reshape"}
        )
        if why:
            lost.append({"model": name, "bug": e["bug"], "why": why[:300]})
            log(f"{name}: fixed-reshape-made-dynamic not proven: {why[:200]}")
            continue
        e["reshape_nodes"] = reshapes
        onnx.save(made, os.path.join(out, rel))
        entries.append(e)
        log(f"{name}: fixed-reshape-made-dynamic proven at {e['runtime_node']}")
    shutil.rmtree(scratch, ignore_errors=True)
    return entries, failures, lost, {"ultralytics": ultralytics.__version__, "torchvision": tv}


# ----------------------------------------------------------------------------------------------- Keras


def build_keras(out: str, log: Log) -> tuple[list[dict], list[dict], list[dict], dict[str, str]]:
    """Run ``keras_models.py`` in the TensorFlow venv (if there is one) and read back its entries."""
    if not os.path.exists(TF_PYTHON):
        log(f"{TF_PYTHON} not found: Keras models skipped")
        return [], [{"model": "keras", "exporter": "tf2onnx", "error": f"skipped: no {TF_PYTHON}"}], [], {}
    proc = subprocess.run(
        [TF_PYTHON, os.path.join(HERE, "keras_models.py"), "--out", out],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    for line in proc.stderr.splitlines():
        if line.startswith("keras_"):
            log(line)
    path = os.path.join(out, "keras_entries.json")
    if proc.returncode != 0 or not os.path.exists(path):
        err = (proc.stderr or proc.stdout)[-300:]
        log(f"keras_models.py failed ({proc.returncode}): {err}")
        return [], [{"model": "keras", "exporter": "tf2onnx", "error": err}], [], {}
    with open(path) as f:
        res = json.load(f)
    os.remove(path)
    return res["models"], res["export_failures"], res["not_proven"], res["tools"]


# ----------------------------------------------------------------------------------------------- bcast


def bcast_check(path: str, expect: list[str]) -> dict[str, Any]:
    """``bcast check --json`` on ``path``: exit code, problem kinds, severities, nodes, first message,
    and whether a problem's node (or one of its related nodes) is one of ``expect``."""
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "bcast", "check", path, "--json"], capture_output=True, text=True, env=env, timeout=900
    )
    res: dict[str, Any] = {"exit": proc.returncode, "kinds": [], "severities": [], "nodes": [], "first": None}
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        res["first"] = (proc.stderr or proc.stdout).strip()[:500]
        return res
    problems = report.get("problems", [])

    def uniq(xs: list[Any]) -> list[Any]:
        return list(dict.fromkeys(x for x in xs if x is not None))

    res["kinds"] = uniq([p.get("kind") for p in problems])
    res["severities"] = uniq([p.get("severity") for p in problems])
    res["nodes"] = uniq([p.get("node") for p in problems])
    res["first"] = problems[0].get("message") if problems else None
    res["problems"] = len(problems)
    if expect:
        named = {p.get("node") for p in problems}
        related = named | {n for p in problems for n in p.get("nodes", [])}
        res["named_expect"] = bool(named & set(expect))
        res["related_expect"] = bool(related & set(expect))
    return res


# ----------------------------------------------------------------------------------------------- main


def build(out: str, log: Log = print) -> dict[str, Any]:
    """Build the family into ``out`` (its onnx/ and manifest.json replaced) and return the manifest."""
    start = time.perf_counter()
    shutil.rmtree(os.path.join(out, "onnx"), ignore_errors=True)
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    entries: list[dict] = []
    failures: list[dict] = []
    lost: list[dict] = []
    tools: dict[str, str] = {}
    for step in (build_sklearn, build_yolo, build_keras):
        got = step(out, log)
        entries.extend(got[0])
        failures.extend(got[1])
        lost.extend(got[2])
        if len(got) > 3:
            tools.update(got[3])  # type: ignore[misc]
    for e in entries:
        e["bcast"] = bcast_check(os.path.join(out, e["model"]), e["expect_nodes"])
        b = e["bcast"]
        log(f"bcast {e['model']}: exit {b['exit']} {b['kinds']} {str(b['first'])[:150]}")

    import onnxruntime
    import skl2onnx
    import sklearn
    import torch

    manifest = {
        "version": 1,
        "kind": "families-others",
        "built_by": "python -m benchmarks.corpus.others",
        "tools": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
            "scikit-learn": sklearn.__version__,
            "skl2onnx": skl2onnx.__version__,
            **tools,
        },
        "seconds": round(time.perf_counter() - start, 1),
        "models": entries,
        "export_failures": failures,
        "not_proven": lost,
    }
    write_manifest(out, manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to (re)build the family in")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    m = build(args.out, log)
    bugs = [e for e in m["models"] if e["bug"]]
    clean = [e for e in m["models"] if not e["bug"]]
    fp = [e["model"] for e in clean if e["bcast"]["exit"] != 0]
    missed = [e["model"] for e in bugs if e["bcast"]["exit"] == 0 or not e["bcast"].get("related_expect")]
    print(
        f"{args.out}: {len(bugs)} proven bugs ({sum(e['latent'] for e in bugs)} latent), {len(clean)} clean models, "
        f"{len(m['export_failures'])} export failures, {len(m['not_proven'])} not proven, in {m['seconds']}s; "
        f"bcast: {len(fp)} clean models flagged {fp}, {len(missed)} bugs missed {missed}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
