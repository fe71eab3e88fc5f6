"""Bounded YAML loading for front matter (docs/spec.md §2.1, 14).

YAML aliases share one node, so a few hundred bytes of `&a`/`*a` can expand to gigabytes once
constructed (a "billion laughs" bomb), and `a: &a [*a]` builds a list that contains itself. The
block is composed into nodes first (linear in its bytes) and measured as it would expand, counting
each shared node every time it is used (memoised, so the measuring stays linear too); only a block
within the limits is constructed.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_NODES = 10_000  # scalars and collections after alias expansion
MAX_DEPTH = 64  # nesting of collections


class YAMLLimitError(yaml.YAMLError):
    """The YAML would expand beyond the limits, or refers to itself."""


class _Loader(yaml.CSafeLoader):
    """PyYAML's safe C loader, except that a date that does not exist (`date: 2024-02-30`) stays
    the text it is instead of raising ValueError out of the loader: the rest of the block is good."""


def _timestamp(loader: yaml.constructor.SafeConstructor, node: yaml.ScalarNode) -> object:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except ValueError:
        return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def load(raw: str) -> Any:
    """`yaml.load` with PyYAML's safe C loader, refusing blocks that expand beyond the limits."""
    loader = _Loader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def check(root: yaml.Node) -> None:
    """Raise YAMLLimitError when `root` expands past MAX_NODES or MAX_DEPTH, or contains itself."""
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, depth)
    open_nodes: set[int] = set()  # nodes whose subtree is being measured: meeting one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            open_nodes.discard(key)
            size = 1 + sum(measured[id(child)][0] for child in children)
            depth = 1 + max((measured[id(child)][1] for child in children), default=0)
            if size > MAX_NODES:
                raise YAMLLimitError(
                    f"front matter expands to more than {MAX_NODES} values (aliases of aliases?)"
                )
            if depth > MAX_DEPTH:
                raise YAMLLimitError(f"front matter is nested more than {MAX_DEPTH} levels deep")
            measured[key] = (size, depth)
            continue
        if key in measured:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise YAMLLimitError("front matter refers to itself through an alias (e.g. `a: &a [*a]`)")
            if id(child) not in measured:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
