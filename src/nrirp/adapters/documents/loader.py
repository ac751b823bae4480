"""The one YAML reader: text (or UTF-8 bytes) in, plain data out, within a :class:`Budget`.

Strict and safe: PyYAML's safe constructors (libyaml's parser when PyYAML has it), one
document, duplicate keys refused (a merge key ``<<`` may be overridden by a key given next
to it, as YAML specifies), mapping keys must be scalars. The budget is checked before
anything is built: the size of the text, then (without references) every event for anchors,
aliases, tags, nesting and count, else the composed node graph for nesting, cycles and its
size once aliases are expanded; a refusal costs at most one pass over the text.

Every failure, whatever its cause, is an :class:`UnreadableDocument` (a
:class:`~nrirp.domain.ports.documents.DocumentError`) with a one-line message that quotes at
most a few hundred characters of the input.
"""

from __future__ import annotations

from typing import Any, Protocol

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    Event,
    NodeEvent,
    ScalarEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from nrirp.adapters.documents.budget import Budget
from nrirp.domain.config.errors import quote
from nrirp.domain.ports.documents import DocumentError, clip

_MAPPING_TAG = "tag:yaml.org,2002:map"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_STR_TAG = "tag:yaml.org,2002:str"
_FLATTENED_TAGS = (_MERGE_TAG, _VALUE_TAG)  # the keys flatten_mapping rewrites


class UnreadableDocument(DocumentError):
    """Text that is not one well-formed YAML document within its budget.

    ``problem`` says what is wrong, ``line`` and ``column`` (1-based) where, when known;
    ``syntax`` tells a YAML or encoding error from a budget refusal.
    """

    def __init__(
        self,
        problem: str,
        *,
        line: int | None = None,
        column: int | None = None,
        syntax: bool = True,
    ) -> None:
        self.problem = clip(" ".join(problem.split()))
        self.line = line
        self.column = column
        self.syntax = syntax
        super().__init__(self.describe())

    @property
    def where(self) -> str:
        """`` at line L, column C`` or nothing."""
        return f" at line {self.line}, column {self.column}" if self.line is not None else ""

    def describe(self, invalid: str = "invalid YAML") -> str:
        """The message; ``invalid`` heads syntax errors (a caller may keep its own words)."""
        if self.syntax:
            return f"{invalid}{self.where}: {self.problem}"
        return f"{self.problem}{self.where}"


class _Loader(Protocol):
    def get_event(self) -> Event | None: ...
    def get_single_node(self) -> Node | None: ...
    def construct_document(self, node: Node) -> Any: ...
    def dispose(self) -> None: ...


# ---------------------------------------------------------------------- construction
class StrictConstructor(SafeConstructor):
    """The safe constructor with unique scalar keys, and any failure to build a value turned
    into a :class:`ConstructorError` at the value's place."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:  # e.g. a timestamp such as 2024-13-45, '!!float abc'
            what = f" {quote(node.value)}" if isinstance(node, ScalarNode) else ""
            raise ConstructorError(
                None, None, f"cannot build the value{what}: {exc}", node.start_mark
            ) from None

    def construct_strict_mapping(self, node: MappingNode) -> dict[Any, Any]:
        if any(key_node.tag in _FLATTENED_TAGS for key_node, _ in node.value):
            return self._construct_merged_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, node)
            if key in out:
                raise _duplicate(key, key_node, node)
            out[key] = self.construct_object(value_node, deep=True)
        return out

    def _construct_merged_mapping(self, node: MappingNode) -> dict[Any, Any]:
        given: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _VALUE_TAG:  # the key '=' is text, as flatten_mapping makes it
                key_node.tag = _STR_TAG
            if key_node.tag == _MERGE_TAG:
                continue
            key = self._key(key_node, node)
            if key in given:
                raise _duplicate(key, key_node, node)
            given.add(key)
        self.flatten_mapping(node)  # merged pairs first: the keys given here override them
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            out[self._key(key_node, node)] = self.construct_object(value_node, deep=True)
        return out

    def _key(self, key_node: Node, node: MappingNode) -> Any:
        if not isinstance(key_node, ScalarNode):
            kind = "a list" if isinstance(key_node, SequenceNode) else "a mapping"
            raise ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"a mapping key must be a scalar, not {kind}",
                key_node.start_mark,
            )
        key = self.construct_object(key_node)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError(
                None, None, f"unusable mapping key {quote(key_node.value)}", key_node.start_mark
            ) from None
        return key


def _duplicate(key: Any, key_node: Node, node: MappingNode) -> ConstructorError:
    return ConstructorError(
        "while constructing a mapping",
        node.start_mark,
        f"found duplicate key {quote(key)}",
        key_node.start_mark,
    )


# the class's own table (add_constructor would copy it too; this keeps SafeConstructor's intact)
StrictConstructor.yaml_constructors = {
    **SafeConstructor.yaml_constructors,
    _MAPPING_TAG: StrictConstructor.construct_strict_mapping,
}

try:
    from yaml._yaml import CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _PurePythonLoader(Reader, Scanner, Parser, Composer, StrictConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)
            StrictConstructor.__init__(self)
            Resolver.__init__(self)

    def _new_loader(text: str) -> _Loader:
        return _PurePythonLoader(text)

    LIBYAML = False
else:

    class _LibYamlLoader(CParser, StrictConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            StrictConstructor.__init__(self)
            Resolver.__init__(self)

    def _new_loader(text: str) -> _Loader:
        return _LibYamlLoader(text)

    LIBYAML = True


# ---------------------------------------------------------------------- the budget
def _located(problem: str, mark: Any, *, syntax: bool = False) -> UnreadableDocument:
    if mark is None:
        return UnreadableDocument(problem, syntax=syntax)
    return UnreadableDocument(problem, line=mark.line + 1, column=mark.column + 1, syntax=syntax)


def _text(source: str | bytes, budget: Budget) -> str:
    """The text, refused when over the size budget or not valid UTF-8 / Unicode."""
    size = len(source)
    if size <= budget.max_bytes and isinstance(source, str):
        try:
            size = len(source.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise UnreadableDocument(
                f"not valid Unicode text ({exc.reason} at character {exc.start})"
            ) from None
    if size > budget.max_bytes:
        raise UnreadableDocument(
            f"{budget.kind} too large: {size} bytes (at most {budget.max_bytes})", syntax=False
        )
    if isinstance(source, str):
        return source
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableDocument(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _scan_events(text: str, budget: Budget) -> None:
    """Refuse references, deep nesting and too many nodes from the events alone."""
    loader = _new_loader(text)
    depth = nodes = 0
    try:
        while True:
            event = loader.get_event()
            if event is None or isinstance(event, StreamEndEvent):
                return
            if isinstance(event, AliasEvent) or (
                isinstance(event, NodeEvent) and event.anchor is not None
            ):
                found = "an alias" if isinstance(event, AliasEvent) else "an anchor"
                raise _refused_reference(found, event)
            if isinstance(event, ScalarEvent | CollectionStartEvent):
                if event.tag is not None:
                    raise _refused_reference("a tag", event)
                nodes += 1
                if nodes > budget.max_nodes:
                    raise _located(f"more than {budget.max_nodes} values", event.start_mark)
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > budget.max_depth:
                    raise _located(
                        f"nested deeper than {budget.max_depth} levels", event.start_mark
                    )
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    finally:
        loader.dispose()


def _refused_reference(found: str, event: Event) -> UnreadableDocument:
    return _located(
        f"YAML anchors, aliases and tags are not allowed (found {found})", event.start_mark
    )


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_tree(root: Node, budget: Budget) -> None:
    """Refuse nesting deeper than the budget and more nodes than it allows. The common case,
    a tree (no alias to a list or mapping), takes one light pass; a shared node switches to
    :func:`_check_graph`."""
    seen: set[int] = set()
    stack: list[tuple[Node, int]] = [(root, 0)] if not isinstance(root, ScalarNode) else []
    nodes = 1
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            _check_graph(root, budget)
            return
        seen.add(id(node))
        depth += 1
        if depth > budget.max_depth:
            raise _located(f"nested deeper than {budget.max_depth} levels", node.start_mark)
        children = _children(node)
        nodes += len(children)
        stack.extend((child, depth) for child in children if type(child) is not ScalarNode)
    if nodes > budget.max_nodes:
        raise UnreadableDocument(f"more than {budget.max_nodes} values", syntax=False)


def _check_graph(root: Node, budget: Budget) -> None:
    """Refuse cycles, nesting deeper than the budget and more nodes than it allows once
    aliases are expanded (a shared node counts once per use), walking each node once."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node)
            size[key] = 1 + sum(size[id(child)] for child in children)
            collection = isinstance(node, SequenceNode | MappingNode)
            depth[key] = collection + max((depth[id(child)] for child in children), default=0)
            if depth[key] > budget.max_depth:
                raise _located(f"nested deeper than {budget.max_depth} levels", node.start_mark)
            if size[key] > budget.max_nodes:
                raise _located(
                    f"more than {budget.max_nodes} values once aliases are expanded",
                    node.start_mark,
                )
            continue
        if key in size:
            continue
        if key in entered:  # on the current path: an alias to an enclosing anchor
            raise _located("an alias refers to a node that contains it", node.start_mark)
        entered.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in size)


# ---------------------------------------------------------------------- entry point
def _load(source: str | bytes, budget: Budget) -> Any:
    text = _text(source, budget)
    if not budget.references:
        _scan_events(text, budget)
    loader = _new_loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_tree(root, budget)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def load_document(source: str | bytes, budget: Budget) -> Any:
    """One YAML (or JSON) document as plain data, read within ``budget``; empty text (or
    only comments) gives ``None``. Bytes must be UTF-8.

    Raises :class:`UnreadableDocument` and nothing else.
    """
    try:
        return _load(source, budget)
    except UnreadableDocument:
        raise
    except yaml.MarkedYAMLError as err:
        problem = err.problem or err.context or "syntax error"
        if err.context and err.problem and err.problem.startswith("but "):
            problem = f"{err.context}, {err.problem}"  # "expected ..., but found ..."
        raise _located(problem, err.problem_mark or err.context_mark, syntax=True) from None
    except yaml.YAMLError as err:
        raise UnreadableDocument(str(err).split("\n", 1)[0]) from None
    except RecursionError:
        raise UnreadableDocument(
            f"nested deeper than {budget.max_depth} levels", syntax=False
        ) from None
    except Exception as exc:  # a bug or an exhausted resource: still the one error class
        raise UnreadableDocument(f"unreadable ({type(exc).__name__}: {exc})") from None
