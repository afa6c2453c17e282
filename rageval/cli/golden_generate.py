"""``rageval golden generate``: options, and the written file for review.

Endpoint settings come from the command line, else a YAML file (``--config``), else the
environment (``RAGEVAL_LLM_BASE_URL``, then ``OPENAI_BASE_URL`` or, for Azure,
``AZURE_OPENAI_ENDPOINT``; ``RAGEVAL_LLM_MODEL``). The API key only ever comes from the
environment variable named by ``api_key_env`` (see rageval.authoring.chat.endpoint_settings).
Output goes to its own file (default ``generated.jsonl`` beside the golden set), never into the
golden set itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from rageval.authoring.chat import API_STYLES, Budget, EndpointConfig, endpoint_settings
from rageval.cli.paths import golden_and_corpus

# option dest -> config-file key, for the endpoint and budget settings
OPTIONS = {
    "base_url": "base_url",
    "model": "model",
    "api_style": "api_style",
    "api_key_env": "api_key_env",
    "api_version": "api_version",
    "timeout": "timeout",
    "retries": "max_retries",
    "backoff": "backoff",
    "temperature": "temperature",
    "max_answer_tokens": "max_answer_tokens",
    "max_requests": "max_requests",
    "max_tokens": "max_tokens",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``golden generate`` to ``p``."""
    p.add_argument(
        "path",
        nargs="?",
        help="the committed golden set, read only (default: golden/retriever.jsonl)",
    )
    p.add_argument(
        "--corpus", help="corpus folder or JSONL (default: corpus/ beside the golden set)"
    )
    p.add_argument(
        "-o",
        "--out",
        help="file for the generated entries, appended to "
        "(default: generated.jsonl beside the golden set)",
    )
    p.add_argument(
        "--config",
        help="YAML file with endpoint settings: the option names below in snake_case "
        "(retries: max_retries)",
    )
    add_endpoint_arguments(p)
    g = p.add_argument_group("questions")
    g.add_argument("--chunks", type=int, default=20, help="chunks to sample (default 20)")
    g.add_argument("--per-chunk", type=int, default=2, help="questions per chunk (default 2)")
    g.add_argument(
        "--chunk", type=int, default=256, help="chunk size in tokens for sampling (default 256)"
    )
    g.add_argument(
        "--min-tokens", type=int, default=32, help="skip chunks shorter than this (default 32)"
    )
    g.add_argument(
        "--min-quote-chars", type=int, default=20, help="drop shorter quotes (default 20)"
    )
    g.add_argument("--seed", type=int, default=0)
    g.add_argument(
        "--dedupe-threshold",
        type=float,
        default=0.9,
        help="cosine similarity at which a question is a near-duplicate (default 0.9)",
    )
    g.add_argument("--id-prefix", default="syn-", help="ids are <prefix><number> (default syn-)")
    g.add_argument(
        "--embedding-model", default="all-MiniLM-L6-v2", help="for near-duplicates and chunking"
    )
    g.add_argument(
        "--cache-dir", help="embedding cache (default $RAGEVAL_CACHE_DIR or ~/.cache/rageval)"
    )
    g.add_argument("--no-progress", action="store_true")


def add_endpoint_arguments(p: argparse.ArgumentParser) -> None:
    """The chat endpoint's options and the run's budget (``golden generate``, ``judge --llm``)."""
    e = p.add_argument_group("endpoint (OpenAI, Azure OpenAI, vLLM, Ollama)")
    e.add_argument(
        "--base-url",
        help="e.g. https://api.openai.com/v1, http://localhost:11434/v1, https://<resource>.openai.azure.com",
    )
    e.add_argument("--model", help="model name (the deployment name for --api-style azure)")
    e.add_argument(
        "--api-style", choices=API_STYLES, help="URL and key header style (default openai)"
    )
    e.add_argument(
        "--api-key-env", help="environment variable holding the API key (default OPENAI_API_KEY)"
    )
    e.add_argument("--api-version", help="Azure api-version query parameter")
    e.add_argument("--timeout", type=float, help="seconds per request (default 60)")
    e.add_argument(
        "--retries", type=int, help="retries on 429, 5xx and timeouts, with backoff (default 4)"
    )
    e.add_argument("--backoff", type=float, help="first backoff in seconds, doubling (default 1)")
    e.add_argument("--temperature", type=float)
    e.add_argument("--max-answer-tokens", type=int, help="max_tokens per answer (0: not sent)")
    b = p.add_argument_group("budget for this run")
    b.add_argument("--max-requests", type=int, help="HTTP requests, retries included (default 100)")
    b.add_argument(
        "--max-tokens", type=int, help="tokens as reported by the endpoint (default 200000)"
    )


def load_settings(args, environ: Mapping[str, str] | None = None) -> tuple[EndpointConfig, Budget]:
    """The endpoint and budget from the command line, else ``--config``, else the environment."""
    given = {key: getattr(args, dest, None) for dest, key in OPTIONS.items()}
    return endpoint_settings(given, args.config, environ)


def build_encoder(model: str, cache_dir: str | None, progress: bool):
    """The project's encoder, for near-duplicate questions (tests replace this)."""
    from rageval.app.config import default_cache_dir
    from rageval.embedding import SentenceTransformerEncoder

    return SentenceTransformerEncoder(model, cache_dir or default_cache_dir(), progress=progress)


def handle(args: argparse.Namespace) -> int:
    """Generate questions into their own file for review and print what was spent and dropped."""
    from rageval.authoring import generate as gen
    from rageval.authoring.chat import ChatClient

    golden_path, corpus_path = golden_and_corpus(args.path, args.corpus)
    out = gen.output_path(golden_path, args.out)
    cfg, budget = load_settings(args)
    client = ChatClient(cfg, budget)
    spec = gen.GenerateSpec(
        args.chunks,
        args.per_chunk,
        args.seed,
        args.min_tokens,
        args.min_quote_chars,
        args.dedupe_threshold,
        args.id_prefix,
    )
    run = gen.generate_file(
        client,
        spec,
        golden_path,
        corpus_path,
        out,
        chunk_size=args.chunk,
        embedding_model=args.embedding_model,
        make_encoder=lambda: build_encoder(
            args.embedding_model, args.cache_dir, not args.no_progress
        ),
        progress=not args.no_progress,
    )
    print_outcome(run.outcome, out, budget)
    preview = gen.merge_preview(run, golden_path)
    if preview is not None:
        line, warn = preview
        print(line)
        if warn:
            print(f"warning: {warn}", file=sys.stderr)
    error = gen.generation_error(run, client)
    if error is not None:
        raise error
    return 0


def print_outcome(result, out: Path, budget: Budget) -> None:
    """What a run wrote, dropped (and why), cleaned and spent; why it stopped early."""
    print(
        f"{len(result.entries)} new questions from {result.answered} of {result.asked} chunks asked"
        f" -> {out} (review, then merge by hand)"
    )
    for reason, n in result.dropped.most_common():
        print(f"  dropped {n:>4}  {reason}")
    removed = sum(sum(e["origin"].get("removed_characters", {}).values()) for e in result.entries)
    if removed:
        print(
            f"  removed {removed} control, escape or bidi characters from generated text "
            "(listed under origin.removed_characters in the file)"
        )
    for dup, of in result.duplicates[:5]:
        print(f"    near-duplicate: {dup!r} ~ {of!r}")
    print(
        f"  spent {budget.requests} of {budget.max_requests} requests, "
        f"{budget.tokens:,} of {budget.max_tokens:,} tokens"
    )
    if result.stopped:
        print(f"warning: stopped early: {result.stopped}", file=sys.stderr)
