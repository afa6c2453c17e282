"""Puts a rageval project's config folder (``rageval.yaml``'s ``config_dir``) in front of
rageval's packaged configs, for every Hydra entry point of rageval (rageval.project)."""
