"""nrirp: NRI resource policies for Kubernetes nodes.

The embedding API's entry points are available here (imported on first use, so that
``import nrirp`` stays light): :class:`Engine` and :class:`KubernetesPod` from
:mod:`nrirp.app.embed`; see ``docs/embedding.md``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the NRI v0.1 exec client imports this on every run

__version__ = "0.1.0"

__all__ = ["Engine", "KubernetesPod", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from nrirp.app.embed import Engine, KubernetesPod

_LAZY = {"Engine", "KubernetesPod"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from nrirp.app import embed

        return getattr(embed, name)
    raise AttributeError(f"module 'nrirp' has no attribute {name!r}")
