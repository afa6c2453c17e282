"""One run of the benchmark: its spec, its stages in order, what it measures, and its folder.

- ``evaluation``: :func:`~rageval.run.evaluation.evaluate`, the one place that sequences the
  stages (it also carries :class:`~rageval.run.spec.RunSpec` and ``LowJudgedWarning``:
  ``from rageval.run.evaluation import RunSpec, evaluate``).
- ``spec``: :class:`RunSpec`, what a run evaluates, built from a run's config or by hand.
- the stages: ``load`` (golden set, corpus, judgements, split), ``chunk``, ``resolve`` (the
  units and the qrels over them), ``embed`` (the timed encoder), ``index``, ``search``,
  ``score`` (metrics per query, staged retrievers' stages), then ``assemble`` (the report's
  last steps).
- ``measure``: timings, latency, ANN recall, backend calls, the costs block; ``memory``: the
  peak resident memory of a stage; ``labels``: judgements laid over the golden set's qrels and
  the judged@k warning.
- ``folder``: a run folder's life (incomplete, complete, failed) and one-line OS errors.

This module imports nothing, so ``rageval.run.folder`` stays light for every command.
"""
