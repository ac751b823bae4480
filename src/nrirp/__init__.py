"""nrirp: NRI resource policies for Kubernetes nodes."""

__version__ = "0.1.0"
