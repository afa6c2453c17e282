"""A tuning study: Optuna searches the config on the tune split, the holdout proves the result.

``python -m rageval -m hydra/sweeper=optuna`` (or ``optuna_bm25``) runs
:func:`rageval.app.study.loop.run_study` from the sweeper plugin (hydra_plugins/rageval_optuna).

- settings.py: ``hydra.sweeper`` as :class:`StudySettings`, the samplers, the shared names;
- space.py: the search space (``hydra.sweeper.params`` and the command line's sweeps);
- sampling.py: the sampler, and what a trial draws (only the keys its search mode reads);
- storage.py: the study in SQLite beside the MLflow store, its name, its lock;
- trials.py: each trial's overrides, job folder and value; repeats; an interrupted study settled;
- loop.py: the trial loop, ``n_jobs`` trials at a time through the configured launcher;
- final.py: best and baseline scored on every golden query, study.json and study.md;
- outcome.py: study.json read back and printed after the leaderboard.

``finish_sweep`` (rageval.app.sweep) then prints the study's block after the leaderboard and logs
it on the parent run (rageval.tracking.study); ``rageval promote --best METRIC --sweep PARENT``
promotes a study's best only when the holdout confirms it
(:func:`rageval.app.promote.confirm_for_promote`). The holdout verdict is rendered by
rageval.report.study.
"""
