"""The NRI resource-manager plugin: drives the domain's ResourceManager from NRI events."""
