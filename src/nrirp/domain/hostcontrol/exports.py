"""The per-container ``resources.sh`` export: its trigger, mount and content."""

from __future__ import annotations

from collections.abc import Mapping

from nrirp.domain.model import Mount
from nrirp.domain.model.annotations import policy_key

EXPORT_ANNOTATION = policy_key("export-resources")
"""``export-resources.resource-policy.nri.io: "true"`` (per container, pod or plain key) asks
for the export."""
EXPORT_DIRECTORY = "/.nri-resource-policy"
EXPORT_FILE = "resources.sh"
TAG_EXPORT = "resources.export"
"""Tag of a container that gets the export (kept across restarts)."""


def export_mount(source: str) -> Mount:
    """The read-only bind mount of the container's export directory."""
    return Mount(
        destination=EXPORT_DIRECTORY, source=source, type="bind", options=("bind", "ro", "rslave")
    )


def render(data: Mapping[str, str]) -> str:
    """``KEY="value"`` lines, sorted by key, quotes and backslashes escaped (shell-sourceable)."""
    lines = []
    for key in sorted(data):
        value = data[key].replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        lines.append(f'{key}="{value}"\n')
    return "".join(lines)
