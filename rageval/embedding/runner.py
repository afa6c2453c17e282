"""An exported ONNX or OpenVINO encoder run by its runtime alone: no torch, transformers or
sentence-transformers import.

Importing sentence-transformers (with torch, transformers and their dependencies) takes longer
than ONNX Runtime or OpenVINO need to embed a few hundred texts, and those backends only used it
to tokenize and pool. For the usual stack (``Transformer`` -> ``Pooling`` [-> ``Normalize``]) this
module does both with the model's ``tokenizer.json`` (the ``tokenizers`` library, which chunking
loads anyway) and numpy. Whether an export may run this way is decided once, when it is built
(:func:`matches_sentence_transformers`): its token ids must equal sentence-transformers' own over
the probe texts, and the probe distance stored with the export is measured through this runner.
Any other model (a Dense layer, a pooling mode not listed here, lower-casing, another tokenizer
setting) keeps the sentence-transformers path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

RUNNER_FILE = "rageval_runner.json"
_POOLING = ("mean", "cls", "max")


class DirectEncoderModel:
    """Tokenize, run the ONNX graph, pool: the part of a SentenceTransformer rageval uses
    (``preprocess``, ``max_seq_length``, ``tokenizer.pad_token_id``, ``model(features)``)."""

    def __init__(self, folder: Path, file_name: str, runtime: str = "onnx", session_options=None):
        from tokenizers import Tokenizer

        folder = Path(folder)
        plan = read_runner(folder)
        if plan is None:
            raise ValueError(f"{folder} was not exported to run without sentence-transformers")
        self.max_seq_length = int(plan["max_seq_length"])
        self.pooling, self.normalize = plan["pooling"], bool(plan["normalize"])
        self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        pad_id = (self._tok.padding or {}).get("pad_id")
        pad_token = _pad_token(folder)
        if pad_token and self._tok.token_to_id(pad_token) is not None:
            pad_id = self._tok.token_to_id(pad_token)
        self.tokenizer = _Pad(pad_id or 0)
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=self.max_seq_length)
        self._run = _RUNTIMES[runtime](folder / file_name, session_options)
        self.device = None

    def preprocess(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Token ids, attention mask and token type ids, padded to the longest text."""
        enc = self._tok.encode_batch(list(texts))
        width = max((len(e.ids) for e in enc), default=0)
        out = {
            "input_ids": np.full((len(enc), width), self.tokenizer.pad_token_id, np.int64),
            "attention_mask": np.zeros((len(enc), width), np.int64),
            "token_type_ids": np.zeros((len(enc), width), np.int64),
        }
        for i, e in enumerate(enc):
            n = len(e.ids)
            out["input_ids"][i, :n] = e.ids
            out["attention_mask"][i, :n] = e.attention_mask
            out["token_type_ids"][i, :n] = e.type_ids
        return out

    def __call__(self, features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``{"sentence_embedding": (texts, dim) float32}`` for padded ``features``."""
        hidden = self._run(features)
        mask = features["attention_mask"]
        rows = []
        for h, m in zip(hidden, mask, strict=True):  # row by row: no row depends on another
            keep = h[m.astype(bool)]
            if self.pooling == "cls":
                rows.append(h[0])
            elif self.pooling == "max":
                rows.append(keep.max(axis=0))
            else:
                rows.append(keep.sum(axis=0) / max(len(keep), 1))
        emb = np.stack(rows).astype(np.float32, copy=False)
        if self.normalize:
            emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        return {"sentence_embedding": emb}


def _onnx(path: Path, options):
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def run(features):
        return session.run(None, {k: features[k] for k in names})[0]

    run.session = session  # its profile, for scripts/bench_embedding.py
    return run


def _openvino(path: Path, options):
    import openvino

    # the configuration sentence-transformers' OpenVINO backend compiles with (none: the
    # plugin's defaults), so both paths compute the same vectors
    compiled = openvino.Core().compile_model(str(path), "CPU", options or {})
    names = [p.get_any_name() for p in compiled.inputs]
    request = compiled.create_infer_request()

    def run(features):
        out = request.infer({k: features[k] for k in names})
        return np.array(out[compiled.output(0)], copy=True)  # the request reuses its buffers

    return run


_RUNTIMES = {"onnx": _onnx, "openvino": _openvino}


class _Pad:
    def __init__(self, pad_token_id):
        self.pad_token_id = pad_token_id


def _pad_token(folder: Path) -> str | None:
    try:
        return json.loads((folder / "tokenizer_config.json").read_text()).get("pad_token")
    except (OSError, ValueError):
        return None


def plan(st_model) -> dict | None:
    """How to run ``st_model`` without it: its max_seq_length, pooling and whether it normalizes,
    for a plain Transformer -> Pooling [-> Normalize] model; None for anything else."""
    try:
        modules = list(st_model)
    except TypeError:
        return None
    kinds = [type(m).__name__ for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
        return None
    pool = modules[1]
    mode = getattr(pool, "pooling_mode", None)
    if mode is None and hasattr(pool, "get_pooling_mode_str"):  # sentence-transformers < 5.6
        mode = pool.get_pooling_mode_str()
    if isinstance(mode, (list, tuple)) and len(mode) == 1:
        mode = mode[0]
    if mode not in _POOLING or getattr(pool, "include_prompt", True) is False:
        return None
    cap = getattr(st_model, "max_seq_length", None)
    if not cap or getattr(modules[0], "do_lower_case", False):
        return None
    return {"max_seq_length": int(cap), "pooling": mode, "normalize": len(kinds) == 3}


def matches_sentence_transformers(st_model, folder: Path, texts: Sequence[str]) -> dict | None:
    """The runner's plan when it tokenizes ``texts`` exactly as ``st_model`` does (ids and mask)
    with the ``tokenizer.json`` in ``folder``, else None: the test an export passes, once, to run
    without torch."""
    found = plan(st_model)
    path = Path(folder) / "tokenizer.json"
    if found is None or not path.is_file():
        return None
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_length=found["max_seq_length"])
    preprocess = getattr(st_model, "preprocess", None) or st_model.tokenize
    ref = preprocess(list(texts))
    ids, mask = ref["input_ids"].tolist(), ref["attention_mask"].tolist()
    for i, e in enumerate(tok.encode_batch(list(texts))):
        n = sum(mask[i])
        if e.ids != ids[i][:n] or any(mask[i][n:]) or not all(mask[i][:n]):
            return None
    return found


def write_runner(folder: Path, found: dict | None) -> None:
    """Record in the export whether (and how) it runs without sentence-transformers."""
    (Path(folder) / RUNNER_FILE).write_text(
        json.dumps({"direct": found is not None, **(found or {})})
    )


def read_runner(folder: Path) -> dict | None:
    """What :func:`write_runner` recorded, when the export runs direct (else None)."""
    try:
        info = json.loads((Path(folder) / RUNNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("direct") else None


def runs_direct(folder: Path) -> bool:
    """Whether the export in ``folder`` runs without sentence-transformers."""
    return read_runner(folder) is not None
