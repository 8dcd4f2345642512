"""Decoders with a KV cache of many architectures, in every form they export to.

``python -m benchmarks.corpus.decoders_kv --out DIR``.

Why: a decoder with a KV cache is where a checker is most likely to warn of a clean model: the mask spans the cache
and the new tokens, the positions follow it, and each architecture computes its lengths its own way (OPT counts its
positions along the mask from the cache's length on, BLOOM takes a later layer's length from its cache's elements).
A clean model that is reported above ``info`` fails the gate for nothing.

What: each architecture of :data:`ARCHS` built from a ``transformers`` config with random weights (hidden 32, 2
layers, 4 heads, 2 K/V heads where the architecture has them, vocab 97), wrapped to take flat tensors as
:mod:`benchmarks.corpus.llm` does (its ``FlatCache``), and written as the TorchScript and the dynamo ONNX export, the
IR of OpenVINO's PyTorch frontend and the IR of the TorchScript file. Each file must run in its runtime (onnxruntime,
OpenVINO) at the two sizes of :data:`benchmarks.corpus.llm.SIZES` and give what torch gives; ``bcast check --json``
then runs on each that does. ``DIR/decoders_kv.json`` holds every row; the table printed gives, per architecture and
form, bcast's exit status and the severities it reported ("-" where the form did not export or run, with why in the
JSON). With ``--step``, or by default, the decoding steps of encoder-decoders too (BART, mBART, Marian, T5, Whisper:
the next tokens, the encoder's states and mask, and each layer's self- and cross-attention caches in; see
:func:`benchmarks.corpus.transformers_zoo.seq2seq_step`), as the TorchScript export and both IRs. Needs torch,
transformers, onnxruntime and openvino (the corpus's own venv).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

# torchvision in the shared venv does not match torch (its C ops fail to register), and transformers
# imports it when present: hide it, nothing here needs it
sys.modules.setdefault("torchvision", None)  # type: ignore[arg-type]

import torch  # noqa: E402

from . import llm  # noqa: E402
from .llm import VOCAB, LLMSpec  # noqa: E402
from .transformers_zoo import SEQ2SEQ  # noqa: E402

#: architecture -> (its config's own fields, the cache's K/V heads); every config also gets the common fields of
#: :func:`_config` unless it names them
ARCHS: dict[str, tuple[dict[str, Any], int]] = {
    "mistral": ({"sliding_window": None}, 2),
    "qwen2": ({}, 2),
    "qwen3": ({"head_dim": 8}, 2),
    "phi3": ({"pad_token_id": 0}, 2),
    "gemma": ({"head_dim": 8}, 2),
    "olmo": ({}, 2),
    "olmo2": ({}, 2),
    "granite": ({}, 2),
    "stablelm": ({"partial_rotary_factor": 0.5}, 2),
    "phi": ({"partial_rotary_factor": 0.5, "num_key_value_heads": 4}, 4),
    "gpt_neox": ({"rotary_pct": 0.5, "num_key_value_heads": None}, 4),
    "cohere": ({}, 2),
    "starcoder2": ({"sliding_window": None}, 2),
    "opt": ({"ffn_dim": 64, "word_embed_proj_dim": 32, "num_key_value_heads": None}, 4),
    "gptj": ({"n_embd": 32, "n_head": 4, "n_layer": 2, "rotary_dim": 4, "n_positions": 64}, 4),
    "bloom": ({"n_head": 4, "n_layer": 2}, 4),
    "nemotron": ({"partial_rotary_factor": 0.5, "head_dim": 8}, 2),
    "helium": ({"head_dim": 8}, 2),
}
#: the forms each decoder is written in
FORMS = ("torchscript", "dynamo", "openvino-torch", "openvino-onnx")


def _config(arch: str) -> Any:
    from transformers import AutoConfig

    fields: dict[str, Any] = {
        "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
        "attn_implementation": "eager",
    }  # fmt: skip
    fields.update(ARCHS[arch][0])
    return AutoConfig.for_model(arch, **fields)


def spec(arch: str) -> LLMSpec:
    """The decoder of ``arch`` as :mod:`benchmarks.corpus.llm` describes one (8 dims a head)."""

    def build() -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_config(_config(arch), attn_implementation="eager")

    return LLMSpec(f"{arch}_kv", arch, build, layers=2, kv_heads=ARCHS[arch][1], head_dim=8, heads=4)


def _ir_of(module: Any, source: Any, s: LLMSpec, path: str) -> None:
    """OpenVINO's conversion of ``source`` (the torch module, or an ONNX file's path), its inputs named as the spec."""
    import openvino as ov

    if isinstance(source, str):
        converted = ov.convert_model(source)
    else:
        args = tuple(torch.from_numpy(v) for v in llm.feeds(s, **llm.SIZES[0]).values())
        converted = ov.convert_model(module, example_input=args)
        for port, name in zip(converted.inputs, s.input_names, strict=True):
            port.get_tensor().set_names({name})
    ov.save_model(converted, path, compress_to_fp16=False)


@contextlib.contextmanager
def _silent() -> Iterator[None]:
    """Standard output and error closed at the file descriptors: the TorchScript exporter prints a whole graph from
    C++ when it fails, past Python's redirection."""
    saved = [os.dup(1), os.dup(2)]
    sys.stdout.flush()
    sys.stderr.flush()
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _runs(form: str, path: str, s: LLMSpec, expected: list[Any]) -> str | None:
    """Why the file does not run as torch does at :data:`~benchmarks.corpus.llm.SIZES`, or ``None``."""
    for sizes, want in zip(llm.SIZES, expected, strict=True):
        if form.startswith("openvino"):
            err, got = llm.ov_try(path, s, sizes)
        else:
            _, err, got = llm.ort_try(path, s, sizes)
        why = err or llm._matches(want, got)
        if why:
            return f"at {sizes}: {why}"[:300]
    return None


def sweep_one(arch: str, out: str) -> dict[str, Any]:
    """Every form of one architecture: for each, ``{"bcast": ...}`` (exit status, kinds, severities, first message) or
    why it is missing (``{"export": ...}``, ``{"runs": ...}``)."""
    import onnx

    s = spec(arch)
    row: dict[str, Any] = {"arch": arch}
    try:
        module = llm.module(s)
        expected = [llm._torch_outputs(module, s, sizes) for sizes in llm.SIZES]
    except Exception as exc:
        row["build"] = llm._one_line(exc)[:300]
        return row
    suffix = {form: "xml" if form.startswith("openvino") else "onnx" for form in FORMS}
    paths = {form: os.path.join(out, f"{arch}.{form}.{suffix[form]}") for form in FORMS}
    makers: dict[str, Callable[[], None]] = {
        "torchscript": lambda: llm.export_torchscript(module, s, paths["torchscript"]),
        "dynamo": lambda: llm.export_dynamo(module, s, paths["dynamo"]),
        "openvino-torch": lambda: _ir_of(module, module, s, paths["openvino-torch"]),
        "openvino-onnx": lambda: _ir_of(module, paths["torchscript"], s, paths["openvino-onnx"]),
    }
    for form in FORMS:
        if form == "openvino-onnx" and "bcast" not in row.get("torchscript", {}):
            row[form] = {"export": "no TorchScript file to convert"}
            continue
        try:
            with _silent(), llm._quiet():
                makers[form]()
            if not form.startswith("openvino"):
                model = onnx.load(paths[form])
                llm._name_nodes(model)
                llm._strip(model)
                onnx.save(model, paths[form])
        except Exception as exc:
            row[form] = {"export": llm._one_line(exc)[:300]}
            continue
        why = _runs(form, paths[form], s, expected)
        row[form] = {"runs": why} if why else {"bcast": llm.bcast(paths[form])}
    return row


#: the forms an encoder-decoder's decoding step is written in (the dynamo exporter does not take its caches)
STEP_FORMS = ("torchscript", "openvino-torch", "openvino-onnx")


def _run_feeds(path: str, feeds: dict[str, Any]) -> tuple[str | None, list[Any]]:
    """(error or None, outputs) of the file's runtime on the inputs it takes of ``feeds`` (an exporter may drop one
    the model does not read: Whisper's encoder mask)."""
    import numpy as np

    try:
        if path.endswith(".xml"):
            import openvino as ov

            compiled = ov.Core().compile_model(path, "CPU", llm.OV_EXACT)
            names = {n for port in compiled.inputs for n in port.get_names()}
            result = compiled.create_infer_request().infer({k: v for k, v in feeds.items() if k in names})
            return None, [np.asarray(result[o]) for o in compiled.outputs]
        import onnxruntime as ort

        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        return None, session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})
    except Exception as exc:
        return llm._one_line(exc)[:300], []


def sweep_step(arch: str, out: str) -> dict[str, Any]:
    """:func:`sweep_one` of an encoder-decoder's decoding step (:func:`benchmarks.corpus.transformers_zoo.seq2seq_step`)
    in :data:`STEP_FORMS`, run at two sizes (a step of 3 tokens after 4, of 1 after 7)."""
    from .transformers_zoo import _export_onnx, _to_ir, seq2seq_inputs, seq2seq_step

    row: dict[str, Any] = {"arch": f"{arch} (a step)"}
    sizes = ({"batch": 2, "seq": 3, "past": 4, "source": 6}, {"batch": 1, "seq": 1, "past": 7, "source": 5})
    try:
        torch.manual_seed(0)
        module = seq2seq_step(arch)
        with torch.no_grad():
            expected = [
                [t.numpy() for t in [module(*(torch.from_numpy(v) for v in seq2seq_inputs(**s).values()))]]
                for s in sizes
            ]
    except Exception as exc:
        row["build"] = llm._one_line(exc)[:300]
        return row
    inputs = seq2seq_inputs(**sizes[0])
    paths = {f: os.path.join(out, f"{arch}_step.{f}.{'xml' if 'openvino' in f else 'onnx'}") for f in STEP_FORMS}
    # the dims named as a caller would: the tokens', the cache's and the encoder's lengths, one batch
    length = {"decoder_input_ids": "seq", "encoder_hidden_states": "source", "encoder_attention_mask": "source"}
    axes = {
        name: {0: "batch", 2 if v.ndim == 4 else 1: length.get(name, "source" if "cross" in name else "past_seq")}
        for name, v in inputs.items()
    }

    def onnx_ir() -> None:
        import openvino as ov

        ov.save_model(ov.convert_model(paths["torchscript"]), paths["openvino-onnx"], compress_to_fp16=False)

    makers: dict[str, Callable[[], None]] = {
        "torchscript": lambda: _export_onnx(
            module, inputs, paths["torchscript"], dynamo=False, dynamic_axes=axes, opset_version=17
        ),
        "openvino-torch": lambda: _to_ir(module, inputs, paths["openvino-torch"]),
        "openvino-onnx": onnx_ir,
    }
    for form in STEP_FORMS:
        if form == "openvino-onnx" and "bcast" not in row.get("torchscript", {}):
            row[form] = {"export": "no TorchScript file to convert"}
            continue
        try:
            with _silent(), llm._quiet(), torch.no_grad():
                makers[form]()
        except Exception as exc:
            row[form] = {"export": llm._one_line(exc)[:300]}
            continue
        why = None
        for s, want in zip(sizes, expected, strict=True):
            err, got = _run_feeds(paths[form], seq2seq_inputs(**s))
            why = err or llm._matches(want, got[:1])
            if why:
                why = f"at {s}: {why}"[:300]
                break
        row[form] = {"runs": why} if why else {"bcast": llm.bcast(paths[form])}
    return row


def _cell(entry: dict[str, Any]) -> str:
    b = entry.get("bcast")
    if b is None:
        return "-"
    severities = sorted(set(b.get("severities") or []))
    return f"{b['exit']} {'/'.join(severities) or 'clean'}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to write the exports and decoders_kv.json in")
    ap.add_argument("--arch", action="append", choices=sorted(ARCHS), help="an architecture (default: all)")
    ap.add_argument(
        "--step",
        action="append",
        choices=SEQ2SEQ,
        help="an encoder-decoder's decoding step (default: all, with no --arch)",
    )
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    start = time.perf_counter()
    rows = []
    archs = args.arch or ([] if args.step else list(ARCHS))
    for arch in archs:
        rows.append(sweep_one(arch, args.out))
        print(f"{arch}: " + "  ".join(f"{f} {_cell(rows[-1].get(f, {}))}" for f in FORMS), file=sys.stderr, flush=True)
    for arch in args.step or ([] if args.arch else list(SEQ2SEQ)):
        rows.append(sweep_step(arch, args.out))
        print(f"{arch} (a step): " + "  ".join(f"{f} {_cell(rows[-1].get(f, {}))}" for f in FORMS), file=sys.stderr)
    with open(os.path.join(args.out, "decoders_kv.json"), "w") as fh:
        json.dump({"seconds": round(time.perf_counter() - start), "rows": rows}, fh, indent=1)
    print(f"| architecture | {' | '.join(FORMS)} |")
    print(f"|---|{'---|' * len(FORMS)}")
    for row in rows:
        cells = [row["build"][:40] if "build" in row else _cell(row.get(f, {})) for f in FORMS]
        print(f"| {row['arch']} | {' | '.join(cells)} |")
    flagged = [f"{r['arch']}.{f}" for r in rows for f in FORMS if r.get(f, {}).get("bcast", {}).get("exit")]
    print(f"clean files reported above info: {len(flagged)}" + (f" ({', '.join(flagged)})" if flagged else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
