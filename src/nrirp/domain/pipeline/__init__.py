"""The resource manager pipeline."""

from nrirp.domain.pipeline.config_codec import ConfigCodec, DefaultConfigCodec
from nrirp.domain.pipeline.errors import (
    NotStartedError,
    OperationFailedError,
    PipelineError,
    ReentrantCallError,
    StateRestoreError,
)
from nrirp.domain.pipeline.explaining import UnknownContainerError
from nrirp.domain.pipeline.manager import ResourceManager
from nrirp.domain.pipeline.results import CreateResult, ReconfigureOutcome, StartOutcome

__all__ = [
    "ConfigCodec",
    "CreateResult",
    "DefaultConfigCodec",
    "NotStartedError",
    "OperationFailedError",
    "PipelineError",
    "ReconfigureOutcome",
    "ReentrantCallError",
    "ResourceManager",
    "StartOutcome",
    "StateRestoreError",
    "UnknownContainerError",
]
