"""Time MLflow logging of one finished run folder, e.g. the demo's, into a fresh SQLite store.

    python scripts/bench_logging.py RUN_DIR [--repeats 5]

Each repetition copies RUN_DIR, then logs it with ``rageval.tracking.log.log_run`` (the API the
Hydra app calls) twice into a new store: the first call pays for creating the store's tables, the
second is what every later run of a sweep or a team's store pays (MLflow is imported and the
store's tables created before the timing). Run it with PYTHONPATH pointing
at two checkouts to compare them side by side.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run_dir")
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    import rageval
    from rageval.tracking.client import client_for
    from rageval.tracking.later import load_run
    from rageval.tracking.log import log_run

    first, later = [], []
    for _ in range(a.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            uri = f"sqlite:///{tmp / 'm.db'}"
            client_for(uri).search_experiments()  # import MLflow outside the timing
            for i, bucket in enumerate((first, later)):
                run = tmp / f"run{i}"
                shutil.copytree(a.run_dir, run)
                report = load_run(run)
                report.mlflow_run_id = None
                t = time.perf_counter()
                log_run(
                    report,
                    config=report.config,
                    choices=report.choices,
                    output_dir=run,
                    uri=uri,
                    experiment="bench",
                )
                bucket.append(time.perf_counter() - t)
    print(f"rageval at {Path(rageval.__file__).parent}")
    print(f"log_run, first run of an experiment: median {statistics.median(first):.3f} s")
    print(
        f"log_run, experiment in use:          median {statistics.median(later):.3f} s "
        f"(min {min(later):.3f}, max {max(later):.3f}, {a.repeats} repeats)"
    )


if __name__ == "__main__":
    main()
