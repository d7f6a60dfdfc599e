"""The YAML loader of the models project's files (``*.yml``, the vendor's contract): PyYAML's safe loader,
on libyaml where PyYAML has it, refusing a key repeated in one mapping."""

from __future__ import annotations

import yaml

__all__ = ["StrictLoader"]


_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's where PyYAML has it


class StrictLoader(_SafeLoader):  # type: ignore[valid-type,misc]  # a base chosen at import time
    """SafeLoader that refuses a key repeated in one mapping (PyYAML keeps the last one silently,
    which would drop e.g. a test's first ``blocking:`` without a word); on libyaml's parser where PyYAML
    has it (the project's ``.yml`` files and the vendor's contract are read at every definitions load and every raw load)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}: each key may appear once per mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)
