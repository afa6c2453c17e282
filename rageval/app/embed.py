"""``rageval embed``: fill the embedding cache for the runs a command line describes, before they
run (a sweep then reads every vector warm).

The command line is a run's or a sweep's (``chunk=256,512 embedding=minilm,static
embedding.executor=ray``): every combination is composed as the run would be, its corpus chunked
and its golden set's queries read, and each embedding model then embeds the distinct texts the
cache lacks, once, with the executor its config names (``embedding.executor=ray``: across a Ray
cluster, rageval.embedding.distributed). Runs whose search does not embed (``search=bm25``) are
skipped.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from rageval.errors import ConfigError


@dataclass
class Texts:
    """What one embedding model is asked to embed, each text once (in first-seen order)."""

    encoder: object
    documents: dict[str, None] = field(default_factory=dict)
    queries: dict[str, None] = field(default_factory=dict)
    runs: int = 0


@dataclass(frozen=True)
class Filled:
    """One model's fill: its description, texts asked, texts embedded, seconds, Ray workers."""

    model: str
    documents: int
    queries: int
    embedded: int
    seconds: float
    workers: int | None
    cache: str

    def line(self) -> str:
        asked = self.documents + self.queries
        rate = f", {self.embedded / self.seconds:,.1f} texts/s" if self.seconds > 0 else ""
        n = self.workers
        where = f" on {n} Ray worker{'s' * (n != 1)}" if n else ""
        return (
            f"{self.model}: {self.documents:,} chunk texts and {self.queries:,} queries; "
            f"{self.embedded:,} embedded, {asked - self.embedded:,} already cached "
            f"({self.seconds:.1f} s{rate}{where})\n  cache: {self.cache}"
        )


def jobs(argv: Sequence[str]) -> list[list[str]]:
    """The override lines of every run ``argv`` describes (each sweep value once, in Hydra's
    basic-sweeper order: the cartesian product, last override fastest)."""
    from hydra.errors import HydraException

    from rageval.app.config import CONF_DIR, GROUPS
    from rageval.app.override import parse
    from rageval.app.preflight import prepare_overrides

    given = [a for a in argv if a not in ("-m", "--multirun")]
    flags = [a for a in given if a.startswith("-")]
    if flags:
        raise ConfigError(
            f"rageval embed takes overrides (KEY=VALUE, sweeps as KEY=A,B), not {flags[0]!r}"
        )
    given = prepare_overrides(given, CONF_DIR, GROUPS)  # unknown keys and options: one line
    try:
        choices = []
        for o in (parse(a) for a in given):
            # an optimiser's interval lists no values: Hydra's error says so
            values = o.hydra.sweep_string_iterator() if o.is_interval else o.values
            choices.append([o.with_value(v) for v in values] if o.is_sweep else [o.line])
    except HydraException as err:
        raise ConfigError(f"bad override ({' '.join(given)}): {err}") from None
    return [list(c) for c in itertools.product(*choices)]


def collect(lines: Sequence[str], models: dict[tuple[str, str], Texts]) -> bool:
    """Compose one run, chunk its corpus and add its texts to ``models``; False when its search
    does not embed (nothing to add)."""
    from rageval.app.build import build
    from rageval.app.config import absolute_paths, compose
    from rageval.embedding.canary import choose as choose_canary
    from rageval.embedding.guard import check_query_model
    from rageval.inputs.chunking import chunk_documents, load_tokenizer
    from rageval.run.embed import embeds
    from rageval.run.load import load_inputs

    cfg = compose(lines)
    absolute_paths(cfg)
    parts = build(cfg)
    try:
        if not embeds(parts.retriever):
            return False
        encoder = parts.encoder
        if parts.query_encoder is not None:
            encoder = check_query_model(
                encoder, parts.query_encoder, parts.spec.allow_model_mismatch
            )
        queries = getattr(encoder, "queries", encoder)
        texts = models.setdefault((encoder.fingerprint, queries.fingerprint), Texts(encoder))
        golden, docs = load_inputs(parts.spec)
        tokenizer = load_tokenizer(parts.spec.tokenizer_dir)
        for chunk in chunk_documents(docs, parts.spec.chunking, tokenizer):
            texts.documents.setdefault(chunk.text, None)
        for q in golden.queries:
            texts.queries.setdefault(q.query, None)
        for t in choose_canary(golden.queries, docs):  # the run embeds its canary's passages too
            if not t.is_query:
                texts.documents.setdefault(t.text, None)
        texts.runs += 1
        return True
    finally:
        parts.close()  # an encoder's close drops a loaded model; none is loaded yet


def fill(texts: Texts) -> Filled:
    """Embed what ``texts.encoder``'s cache lacks of its texts."""
    enc = texts.encoder
    prepare = getattr(getattr(enc, "documents", enc), "prepare_export", None)
    if callable(prepare):  # an export built once (a static model's distillation) is not embedding
        prepare()
    before = int(getattr(enc, "texts_encoded", 0) or 0)
    start = time.perf_counter()
    prefill = getattr(enc, "prefill", None)
    if not callable(prefill):  # a plug-in encoder: its own encode methods (and cache, if any)
        enc.encode_documents(list(texts.documents))
        enc.encode_queries(list(texts.queries))
    else:
        prefill(list(texts.documents), list(texts.queries))
    seconds = time.perf_counter() - start
    stats = getattr(getattr(enc, "documents", enc), "last_fill", None)
    cache = getattr(getattr(getattr(enc, "documents", enc), "cache", None), "dir", "")
    return Filled(
        model=str(getattr(enc, "description", "") or enc.fingerprint[:12]),
        documents=len(texts.documents),
        queries=len(texts.queries),
        embedded=int(getattr(enc, "texts_encoded", 0) or 0) - before,
        seconds=seconds,
        workers=len(stats.workers) if stats is not None and stats.workers else None,
        cache=str(cache),
    )


def embed(argv: Sequence[str], out=None) -> list[Filled]:
    """Fill the cache for every run of ``argv``; prints one line per model (to ``out``)."""
    import sys

    out = out or sys.stdout
    runs = jobs(argv)
    models: dict[tuple[str, str], Texts] = {}
    skipped = [lines for lines in runs if not collect(lines, models)]
    n = len(runs)
    print(
        f"rageval embed: {n} run{'s' * (n != 1)}, {len(models)} embedding "
        f"model{'s' * (len(models) != 1)}"
        + (f" ({len(skipped)} without vector search skipped)" if skipped else ""),
        file=out,
        flush=True,
    )
    done = []
    for texts in models.values():
        try:
            done.append(fill(texts))
        finally:
            close = getattr(texts.encoder, "close", None)
            if callable(close):
                close()
        print(done[-1].line(), file=out, flush=True)
    return done
