"""Translation between NRI protobuf messages and the domain's neutral values.

Protobuf types stop here: the resource manager only sees ``Pod``, ``Container``,
``LinuxResources``, ``Adjustment`` and ``Update``. Optional-wrapper presence is kept (unset is
``None``, set-to-zero is ``0``), and outgoing messages carry only the fields that are set.
"""

from nrirp.adapters.nri.resmgr.translate.changes import (
    adjustment_from_pb,
    adjustment_to_pb,
    scheduling_from_pb,
    scheduling_to_pb,
    update_from_pb,
    update_to_pb,
    updates_to_pb,
)
from nrirp.adapters.nri.resmgr.translate.errors import TranslationError
from nrirp.adapters.nri.resmgr.translate.objects import (
    container_from_pb,
    container_state_from_pb,
    pod_from_pb,
)
from nrirp.adapters.nri.resmgr.translate.resources import resources_from_pb, resources_to_pb

__all__ = [
    "TranslationError",
    "adjustment_from_pb",
    "adjustment_to_pb",
    "container_from_pb",
    "container_state_from_pb",
    "pod_from_pb",
    "resources_from_pb",
    "resources_to_pb",
    "scheduling_from_pb",
    "scheduling_to_pb",
    "update_from_pb",
    "update_to_pb",
    "updates_to_pb",
]
