"""An explanation document (:func:`~nrirp.app.explain.explanation_document`) as text.

A header (container, policy, verdict, where it is now, a remembered refusal, notes), then
each stage: its outcome, every candidate with how it fared, and the scoring items of the
first candidates side by side (the winner first; an item whose values decided is marked
``>``), each with which value wins it (``BETTER``: higher, lower, yes, first). Items that do
not apply to any of the shown candidates are left out.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from nrirp.app.explain.document import document_label

DEFAULT_COLUMNS = 4

_BETTER = {"higher": "higher", "lower": "lower", "true": "yes", "first": "first"}
"""How an item's ``better`` reads in the ``BETTER`` column (a value that wins the item)."""


def render_explanation(document: Mapping[str, Any], *, columns: int = DEFAULT_COLUMNS) -> str:
    """The document as text; ``columns``: candidates whose items are shown side by side."""
    lines = [
        f"container:  {document_label(document)} (id {document.get('container_id', '?')})",
        f"policy:     {document.get('policy', '?')}",
        f"verdict:    {document.get('verdict', '?')}: {document.get('summary', '')}",
    ]
    if document.get("placement"):
        lines.append(f"now:        {document['placement']}")
    if document.get("refusal"):
        when = _time(document.get("refused_at"))
        lines.append(f"refused:    {when}{document['refusal']}")
    for note in document.get("notes") or ():
        lines.append(f"note:       {note}")
    for stage in document.get("stages") or ():
        lines.append("")
        lines.extend(_stage(stage, columns))
    return "\n".join(lines) + "\n"


def _stage(stage: Mapping[str, Any], columns: int) -> list[str]:
    lines = [f"{stage.get('name', '?')}: {stage.get('outcome', '')}"]
    if stage.get("rule"):
        lines.append(f"  ranked by: {stage['rule']}")
    candidates: Sequence[Mapping[str, Any]] = stage.get("candidates") or ()
    if not candidates:
        return lines
    rows = [["CANDIDATE", "STANDING", "NOTE"]]
    rows += [[c.get("name", ""), c.get("standing", ""), c.get("note", "")] for c in candidates]
    lines.extend("  " + line for line in _table(rows))
    scored = [c for c in candidates if c.get("items")]
    if scored and columns > 0:
        lines.append("")
        lines.extend("  " + line for line in _items(scored[:columns], stage.get("deciding")))
    return lines


def _items(
    candidates: Sequence[Mapping[str, Any]], deciding: Mapping[str, Any] | None
) -> list[str]:
    """Items as rows, candidates as columns (the rows of the first candidate's items)."""
    first: Sequence[Mapping[str, Any]] = candidates[0]["items"]
    decided = deciding["item"] if deciding else None
    rows = [["", "ITEM", "BETTER", *(c.get("name", "") for c in candidates)]]
    for index, item in enumerate(first):
        values = [_value(c["items"][index]) if index < len(c["items"]) else "" for c in candidates]
        if all(v == "-" for v in values):
            continue
        mark = ">" if decided is not None and _same(item, decided) else ""
        label = f"{item.get('number', '')} {item.get('name', '')}"
        better = item.get("better")
        rows.append([mark, label, _BETTER.get(str(better), str(better or "")), *values])
    return _table(rows)


def _same(item: Mapping[str, Any], decided: Mapping[str, Any]) -> bool:
    return bool(
        item.get("number") == decided.get("number") and item.get("name") == decided.get("name")
    )


def _value(item: Mapping[str, Any]) -> str:
    value = item.get("value")
    if value is None:
        return "-"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value)


def _time(at: Any) -> str:
    if not isinstance(at, int | float) or at <= 0:
        return ""
    stamp = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ ")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
