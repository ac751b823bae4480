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
from nrirp.domain.control.runtime import RuntimeController

__all__ = [
    "ControlContext",
    "Controller",
    "ControllerRegistry",
    "Hook",
    "HostController",
    "RuntimeController",
    "enforce",
    "invoke",
]
