"""Synthetic golden-set questions from an LLM: sample chunks, ask a chat endpoint for questions each
passage answers with a supporting quote, keep those whose quote is verbatim in the document, and
drop near-duplicate questions (embedding similarity against the golden set and each other).

The result is ``source: synthetic`` entries labelled with evidence quotes, for a reviewer to read
before merging; :func:`generate_file` appends them to their own file, never the golden set
(``rageval golden generate`` prints what it did).
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rageval.authoring.chat import BudgetExhausted, ChatClient, MalformedAnswer, Rejected
from rageval.authoring.edit import next_ids, verbatim_quote
from rageval.errors import ConfigError, InputError, RagevalError
from rageval.retrieval.base import Encoder
from rageval.types import Chunk, Document, GoldenQuery, GoldenSet

SYSTEM = (
    "You write evaluation questions for a company's internal search engine. Answer with JSON only."
)
PROMPT = """Write {n} different questions that an employee might type into a search box and \
that the passage below answers.
Phrase each question the way a person would ask it, without copying the passage's wording.
For each question, copy the shortest quote from the passage that answers it (one or two \
sentences), character for character.
Answer with JSON only, in this shape:
{{"questions": [{{"question": "...", "quote": "..."}}]}}

Document: {doc}
<passage>
{text}
</passage>"""
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


@dataclass(frozen=True)
class GenerateSpec:
    """How many chunks to sample and questions to ask for, and what counts as usable."""

    chunks: int = 20
    per_chunk: int = 2
    seed: int = 0
    min_tokens: int = 32
    min_quote_chars: int = 20
    dedupe_threshold: float = 0.9
    id_prefix: str = "syn-"

    def __post_init__(self) -> None:
        for name in ("chunks", "per_chunk"):
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}"
                )
        if not 0.0 < self.dedupe_threshold <= 1.0:
            raise ConfigError(
                f"--dedupe-threshold is a cosine similarity in (0, 1], got {self.dedupe_threshold}"
            )
        if not self.id_prefix or any(c.isspace() for c in self.id_prefix):
            raise ConfigError(f"--id-prefix must be a non-empty word, got {self.id_prefix!r}")


@dataclass(frozen=True)
class Candidate:
    """A generated question with its verbatim quote from ``doc``, before dedupe and checks."""

    question: str
    doc: str
    quote: str
    chunk: str  # the sampled chunk's <doc>:<ordinal> label, kept as provenance
    removed: dict[str, int] = field(default_factory=dict)  # unsafe characters stripped


@dataclass
class Outcome:
    """New entries (JSON objects), what was dropped and why, and why the run ended early if it
    did."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    asked: int = 0
    answered: int = 0
    stopped: str | None = None
    error: RagevalError | None = None
    malformed_example: str | None = None


def build_messages(chunk: Chunk, n: int) -> list[dict[str, str]]:
    """The chat messages asking for ``n`` questions about ``chunk``."""
    user = PROMPT.format(n=n, doc=chunk.doc_id, text=chunk.text)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_questions(content: str) -> tuple[list[tuple[str, str]], int]:
    """(question, quote) pairs from an answer, and how many items lacked one of them.

    Accepts ``{"questions": [...]}`` or a bare list, inside a code fence or after a ``<think>``
    block; raises MalformedAnswer when there is no such JSON at all."""
    text = _THINK.sub("", content).strip()
    fenced = _FENCE.search(text)
    text = fenced.group(1).strip() if fenced else text
    obj = _first_json(text)
    items = obj.get("questions") if isinstance(obj, dict) else obj
    if not isinstance(items, list):
        raise MalformedAnswer(f'expected {{"questions": [...]}}, got: {_short(content)!r}')
    pairs, bad = [], 0
    for item in items:
        q = item.get("question") if isinstance(item, dict) else None
        quote = item.get("quote") if isinstance(item, dict) else None
        if isinstance(q, str) and isinstance(quote, str) and q.strip() and quote.strip():
            pairs.append((" ".join(q.split()), quote.strip()))
        else:
            bad += 1
    return pairs, bad


# ANSI/VT escape sequences (CSI, OSC, two-character), then single characters: C0/C1 controls,
# bidirectional overrides and isolates (the "Trojan Source" characters) and zero-width ones
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_INVISIBLE = set("\u061c\u200b\u200c\u200d\u200e\u200f\u2060\ufeff") | {
    chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def strip_unsafe(text: str, removed: Counter) -> str:
    """``text`` without terminal escape sequences, control characters (other than whitespace)
    and bidi or zero-width characters: generated text must read in a review and in a terminal as
    it is stored. What was removed is counted in ``removed`` (by code point name)."""
    text, n = _ESCAPES.subn("", text)
    if n:
        removed["ANSI escape sequence"] += n
    out = []
    for ch in text:
        if ch in _INVISIBLE or (unicodedata.category(ch) == "Cc" and not ch.isspace()):
            removed[f"U+{ord(ch):04X} {unicodedata.name(ch, 'CONTROL')}"] += 1
        else:
            out.append(ch)
    return "".join(out)


def _first_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    end = max(text.rfind("}"), text.rfind("]"))
    if starts and end > min(starts):
        try:
            return json.loads(text[min(starts) : end + 1])
        except ValueError:
            pass
    raise MalformedAnswer(f"the answer is not JSON: {_short(text)!r}")


def sample_chunks(chunks: Sequence[Chunk], spec: GenerateSpec) -> list[Chunk]:
    """``spec.chunks`` chunks of at least ``spec.min_tokens`` tokens, drawn with ``spec.seed``."""
    eligible = [c for c in chunks if c.n_tokens >= spec.min_tokens]
    if not eligible:
        raise ConfigError(
            f"no chunk has {spec.min_tokens} tokens or more to write questions about; "
            "lower --min-tokens or use a larger --chunk"
        )
    return random.Random(spec.seed).sample(eligible, min(spec.chunks, len(eligible)))


def dedupe(
    candidates: Sequence[Candidate], existing: Sequence[str], encoder: Encoder, threshold: float
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """Keep each candidate whose cosine similarity to every existing query and every earlier kept
    candidate is below ``threshold``; also return (dropped question, the question it repeats)."""
    if not candidates:
        return [], []
    texts = [*existing, *(c.question for c in candidates)]
    vec = np.asarray(encoder.encode_queries(texts), dtype=np.float32)
    vec = vec / np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
    rows = list(range(len(existing)))
    kept, dups = [], []
    for i, cand in enumerate(candidates):
        row = len(existing) + i
        if rows:
            sims = vec[rows] @ vec[row]
            j = int(np.argmax(sims))
            if sims[j] >= threshold:
                dups.append((cand.question, texts[rows[j]]))
                continue
        rows.append(row)
        kept.append(cand)
    return kept, dups


def generate(
    client: ChatClient,
    docs: Sequence[Document],
    chunks: Sequence[Chunk],
    existing: Sequence[GoldenQuery],
    encoder: Encoder,
    spec: GenerateSpec,
    progress: bool = True,
) -> Outcome:
    """Ask for questions about sampled chunks until done, the budget is spent or the endpoint fails
    for good; ``Outcome.entries`` holds what was collected either way (ids unique vs
    ``existing``)."""
    from tqdm.auto import tqdm

    by_id = {d.id: d for d in docs}
    out = Outcome()
    candidates: list[Candidate] = []
    for chunk in tqdm(
        sample_chunks(chunks, spec), desc="asking", unit="chunk", disable=not progress
    ):
        out.asked += 1
        try:
            pairs, bad = parse_questions(client.complete(build_messages(chunk, spec.per_chunk)))
        except BudgetExhausted as err:
            out.asked -= 1
            out.stopped = str(err)
            break
        except MalformedAnswer as err:
            out.dropped["malformed answer"] += 1
            out.malformed_example = out.malformed_example or str(err)
            continue
        except Rejected:
            out.dropped["prompt rejected by the endpoint"] += 1
            continue
        except RagevalError as err:  # retries spent, or the endpoint refused the settings
            out.error = err
            break
        out.answered += 1
        out.dropped["item without question or quote"] += bad
        out.dropped["more questions than asked for"] += max(0, len(pairs) - spec.per_chunk)
        for question, quote in pairs[: spec.per_chunk]:
            removed: Counter = Counter()
            question = " ".join(strip_unsafe(question, removed).split())
            quote = strip_unsafe(quote, removed)
            if not question or not quote.strip():
                out.dropped["item without question or quote"] += 1
                continue
            exact = verbatim_quote(by_id[chunk.doc_id].text, quote)
            if exact is None:
                out.dropped["quote not in the document"] += 1
            elif len(exact) < spec.min_quote_chars:
                out.dropped["quote too short"] += 1
            else:
                candidates.append(
                    Candidate(question, chunk.doc_id, exact, chunk.label, dict(removed))
                )
    kept, out.duplicates = dedupe(
        candidates, [q.query for q in existing], encoder, spec.dedupe_threshold
    )
    out.dropped["near-duplicate question"] += len(out.duplicates)
    ids = next_ids({q.id for q in existing}, spec.id_prefix, len(kept))
    model = client.cfg.model
    out.entries = [
        {
            "id": qid,
            "query": c.question,
            "evidence": [{"doc": c.doc, "quote": c.quote, "grade": 1}],
            "source": "synthetic",
            "origin": {"model": model, "chunk": c.chunk}
            | ({"removed_characters": c.removed} if c.removed else {}),
        }
        for qid, c in zip(ids, kept, strict=True)
    ]
    out.dropped = Counter({k: v for k, v in out.dropped.items() if v})
    return out


def output_path(golden_path: Path, out: str | None) -> Path:
    """The file generated questions go to: ``out``, else generated.jsonl beside the golden set;
    never the golden set itself."""
    path = Path(out) if out else golden_path.parent / "generated.jsonl"
    if path.resolve() == golden_path.resolve():
        raise ConfigError(
            f"refusing to write generated questions into the golden set {golden_path}: they go to "
            "their own file for review (--out), and are merged by hand",
            path=str(path),
        )
    return path


@dataclass
class GeneratedFile:
    """A run of :func:`generate_file`: its outcome, the file it appended to, and the golden set
    and the file's earlier entries as they were read before (None: none)."""

    outcome: Outcome
    out: Path
    golden: GoldenSet | None
    earlier: GoldenSet | None


def generate_file(
    client: ChatClient,
    spec: GenerateSpec,
    golden_path: Path,
    corpus_path: Path | None,
    out: Path,
    *,
    chunk_size: int,
    embedding_model: str,
    make_encoder: Callable[[], Encoder],
    progress: bool = True,
) -> GeneratedFile:
    """Generate questions about the corpus's chunks (of ``chunk_size`` tokens, by the embedding
    model's tokenizer) unlike those of the golden set and of ``out``, and append them to
    ``out``; refuses an ``out`` holding entries that are not synthetic (a golden set).
    ``make_encoder`` builds the encoder for near-duplicates once the inputs are read."""
    from rageval.authoring.edit import read_golden
    from rageval.embedding import resolve_model_path
    from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
    from rageval.inputs.corpus import load_corpus

    _, golden = read_golden(golden_path)
    _, earlier = read_golden(out)
    real = [q.id for q in (earlier.queries if earlier else ()) if q.source != "synthetic"]
    if real:
        raise ConfigError(
            f"refusing to append: {len(real)} entries (e.g. {real[0]!r}) are not source synthetic, "
            "so this looks like a golden set; pick another --out",
            path=str(out),
        )
    if corpus_path is None:
        raise InputError("no corpus to write questions about: pass --corpus")
    existing = [*(golden.queries if golden else ()), *(earlier.queries if earlier else ())]
    docs = load_corpus(corpus_path)
    encoder = make_encoder()
    tokenizer = load_tokenizer(str(resolve_model_path(embedding_model)))
    chunks = chunk_documents(docs, ChunkingSpec(chunk_size), tokenizer)
    result = generate(client, docs, chunks, existing, encoder, spec, progress=progress)
    if result.entries:
        append_entries(out, result.entries)
    return GeneratedFile(result, out, golden, earlier)


def append_entries(out: Path, entries: Sequence[dict[str, Any]]) -> None:
    """Append ``entries`` to ``out`` as JSON lines, under the file's lock (what another run
    appended meanwhile stays)."""
    from rageval.formats.atomic import atomic_write_text, locked

    lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
    with locked(out):  # what another run appended meanwhile stays
        earlier_text = out.read_text(encoding="utf-8") if out.is_file() else ""
        sep = "" if not earlier_text or earlier_text.endswith("\n") else "\n"
        atomic_write_text(out, earlier_text + sep + lines)


def merge_preview(run: GeneratedFile, golden_path: Path) -> tuple[str, str | None] | None:
    """The synthetic share of the golden set once the file is merged into it, and the warning
    when that is above the limit (rageval.authoring.inspect.synthetic_line); None without a
    golden set."""
    from rageval.authoring.inspect import synthetic_line
    from rageval.inputs.golden import entry_from_dict

    if run.golden is None:
        return None
    new = [entry_from_dict(e) for e in run.outcome.entries]
    merged = [*run.golden.queries, *(run.earlier.queries if run.earlier else ()), *new]
    return synthetic_line(merged, f"merging {run.out.name} into {golden_path.name}")


def generation_error(run: GeneratedFile, client: ChatClient) -> RagevalError | None:
    """The error a run ends with: the endpoint's (saying where the questions made before it
    are), or no usable answer at all; None when it went well enough."""
    result = run.outcome
    if result.error is not None:
        saved = f"; the {len(result.entries)} questions made before it are saved in {run.out}"
        return type(result.error)(str(result.error) + (saved if result.entries else ""))
    if not result.answered and result.malformed_example:
        return RagevalError(
            f"no usable answer from {client.scrub(client.cfg.url)}: "
            f"{result.dropped['malformed answer']} malformed, e.g. {result.malformed_example}; "
            "check --model and --api-style"
        )
    return None


def _short(s: str, n: int = 80) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."
