"""Config keys that were removed (rageval.config_schema.REMOVED_KEYS): a command line or a file of
the project's config folder that still sets one stops with one line naming the key to write
instead, not with Hydra's struct error."""

from __future__ import annotations

from collections.abc import Sequence

from rageval.errors import ConfigError


def refuse_removed_keys(argv: Sequence[str]) -> None:
    """A removed key (rageval.config_schema.REMOVED_KEYS) set on the command line or in a YAML
    file of the project's config folder: one ConfigError naming the key to write instead, not
    Hydra's struct error."""
    from rageval.app.override import is_override
    from rageval.config_schema import REMOVED_KEYS, override_key, removed_key_message

    for arg in argv:
        key = override_key(arg)
        if is_override(arg) and key in REMOVED_KEYS:
            value = arg.split("=", 1)[1]
            raise ConfigError(removed_key_message(key, value, f"override {arg!r}"))
    from rageval.project import find_project

    project = find_project()
    if project is None or project.config_dir is None:
        return
    import yaml

    for path in sorted(project.config_dir.rglob("*.yaml")):
        try:
            node = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # Hydra says what is wrong with the file
        for key in REMOVED_KEYS:
            head, _, leaf = key.partition(".")
            block = node.get(head) if isinstance(node, dict) else None
            if isinstance(block, dict) and leaf in block:
                raise ConfigError(removed_key_message(key, block[leaf], str(path)))
