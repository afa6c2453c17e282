"""The metric@k curve: one line per headline metric present in the report, as a PNG."""

from __future__ import annotations

from types import SimpleNamespace

from rageval.report.eval_report import HEADLINE
from rageval.report.plots import curve_png


def test_curve_is_a_png_with_one_line_per_headline_metric(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    ks = [1, 3, 5]
    metrics = {f"{m}@{k}": k / 10 for m in HEADLINE[:-1] for k in ks}  # the last one is missing
    report = SimpleNamespace(metrics=metrics, ks=ks, counts={"queries": 8})
    lines = []
    save = plt.Figure.savefig
    monkeypatch.setattr(
        plt.Figure, "savefig", lambda fig, p: lines.append(fig.axes[0].get_lines()) or save(fig, p)
    )
    path = curve_png(report, tmp_path / "plots" / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (drawn,) = lines
    assert [line.get_label() for line in drawn] == list(HEADLINE[:-1])
    assert [list(line.get_xdata()) for line in drawn] == [ks] * (len(HEADLINE) - 1)


def test_drawing_neither_imports_pyplot_nor_switches_the_callers_backend(tmp_path):
    """A notebook that calls rageval keeps its backend: the plots are drawn on an Agg canvas of
    their own, without pyplot (whose import alone cost ~0.4 s of every run)."""
    import subprocess
    import sys

    code = f"""
import sys
import matplotlib
matplotlib.use("svg")
from types import SimpleNamespace
from pathlib import Path
from rageval.report.plots import curve_png
report = SimpleNamespace(metrics={{"recall@1": 0.5, "recall@3": 0.75}}, ks=[1, 3],
                         counts={{"queries": 4}})
path = curve_png(report, Path({str(tmp_path / "c.png")!r}))
assert path.read_bytes()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
print(matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["svg", "False"]
