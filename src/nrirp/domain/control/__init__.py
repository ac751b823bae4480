"""Controllers: turn the policy's recorded changes into runtime adjustments/updates and
host actions."""

from nrirp.domain.control.controller import (
    ControlContext,
    Controller,
    ControllerRegistry,
    Hook,
    enforce,
    invoke,
)
from nrirp.domain.control.host import HostController
from nrirp.domain.control.runtime import ALL_FEATURES, RuntimeController, RuntimeFeatures

__all__ = [
    "ALL_FEATURES",
    "ControlContext",
    "Controller",
    "ControllerRegistry",
    "Hook",
    "HostController",
    "RuntimeController",
    "RuntimeFeatures",
    "enforce",
    "invoke",
]
