"""Where a policy put everything, as neutral values: the machine, the policy's pools or
balloons, and each container's CPUs, memory nodes and memory (:class:`Placement`).

One view for every consumer: the pictures (``nrirp simulate --svg/--html``, ``nrirp status
--svg``), the test kit's assertions (``nrirp.testing``) and JSON (:func:`placement_document`,
:func:`placement_from_document`).

- :func:`placement_of`: a running resource manager's (an engine's, the daemon's).
- :func:`groups_from_description`: a policy's ``describe()`` as :class:`Group` values.
"""

from nrirp.app.placement.description import groups_from_description, reserved_cpus
from nrirp.app.placement.document import placement_document, placement_from_document
from nrirp.app.placement.manager import placement_of
from nrirp.app.placement.model import Group, PlacedContainer, Placement

__all__ = [
    "Group",
    "PlacedContainer",
    "Placement",
    "groups_from_description",
    "placement_document",
    "placement_from_document",
    "placement_of",
    "reserved_cpus",
]
