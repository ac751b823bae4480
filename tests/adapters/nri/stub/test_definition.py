"""Which handlers a plugin implements, and the plugins the stub refuses."""

from __future__ import annotations

from typing import Any

import pytest

from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.stub import Plugin, PluginDefinitionError, Stub, discover_handlers
from nrirp.adapters.nri.stub.plugin import EVENT_METHODS


def test_overridden_methods_make_the_mask() -> None:
    class Some(Plugin):
        async def configure(self, request: Any) -> None:
            return None

        async def create_container(self, pod: Any, container: Any) -> None:
            return None

        async def remove_pod_sandbox(self, pod: Any) -> None:
            return None

    handlers = discover_handlers(Some())
    assert handlers.events == EventMask.CREATE_CONTAINER | EventMask.REMOVE_POD_SANDBOX
    assert set(handlers.methods) == {"configure", "create_container", "remove_pod_sandbox"}


def test_inherited_overrides_count_and_every_event_method_maps_to_its_bit() -> None:
    class Base(Plugin):
        async def stop_container(self, pod: Any, container: Any) -> None:
            return None

    class Child(Base):
        pass

    assert discover_handlers(Child()).events == EventMask.STOP_CONTAINER
    for name, event in EVENT_METHODS.items():
        assert hasattr(Plugin, name)
        assert EventMask.of(event).pretty().lower() == name.replace("_", "")


def test_duck_typed_plugins_and_instance_attributes_are_accepted() -> None:
    class Duck:
        async def start_container(self, pod: Any, container: Any) -> None:
            return None

    assert discover_handlers(Duck()).events == EventMask.START_CONTAINER

    async def handler(pod: Any, container: Any) -> None:
        return None

    plugin = Plugin()
    plugin.post_start_container = handler  # type: ignore[method-assign]
    assert discover_handlers(plugin).events == EventMask.POST_START_CONTAINER


def test_a_plugin_without_event_handlers_is_refused() -> None:
    class OnlySync(Plugin):
        async def synchronize(self, pods: Any, containers: Any) -> None:
            return None

    with pytest.raises(PluginDefinitionError, match="implements no NRI event handler"):
        discover_handlers(OnlySync())
    with pytest.raises(PluginDefinitionError, match="implements no NRI event handler"):
        Stub(Plugin(), name="p", index="01", environ={})


def test_handlers_must_be_async() -> None:
    class Sync(Plugin):
        def create_container(self, pod: Any, container: Any) -> None:  # type: ignore[override]
            return None

    with pytest.raises(
        PluginDefinitionError, match=r"Sync.create_container must be an 'async def'"
    ):
        discover_handlers(Sync())
