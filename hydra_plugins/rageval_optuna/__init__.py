"""rageval's Optuna sweeper for Hydra: ``hydra/sweeper=optuna`` (rageval.app.study)."""
