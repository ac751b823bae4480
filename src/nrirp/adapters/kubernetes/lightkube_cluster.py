"""The node agent's API-server operations through lightkube's asyncio client.

Imported only when the agent runs (``nrirp run`` without ``--config-file``), so the daemon's
start-up does not pay for lightkube otherwise. What the code relies on from lightkube 1.0
(``docs/kubernetes.md``, and the project's notes on the API):

* custom resources and their status are patched with ``PatchType.MERGE`` (lightkube's default,
  strategic merge, is 415 for custom resources); the NodeResourceTopology is written with
  server-side apply (``PatchType.APPLY``, field manager ``nri-resource-policy``, forced);
* ``ApiError`` is raised only for error bodies of content type ``application/json``; other
  HTTP errors arrive as ``HTTPStatusError`` and are mapped here the same way;
* watches are asked for bookmarks (``allowWatchBookmarks``; lightkube's ``watch()`` has no
  parameter for it, so the request is prepared through its generic client with that one
  parameter added) and closed explicitly when the caller stops iterating; a 410 surfaces as
  ``ApiError`` (an ``ERROR`` event) or, when the server refuses the watch outright, as a plain
  ``HTTPStatusError`` whose body lightkube has already closed; both become
  :class:`~nrirp.adapters.kubernetes.errors.Gone` (403 :class:`Forbidden` and so on).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import httpx2
from lightkube import AsyncClient, KubeConfig
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.core_v1 import Node
from lightkube.types import OnErrorAction, OnErrorResult, PatchType

from nrirp.adapters.kubernetes.cluster import (
    CONFIG_GROUP,
    CONFIG_VERSION,
    FIELD_MANAGER,
    NRT_GROUP,
    NRT_KIND,
    NRT_PLURAL,
    NRT_VERSION,
    JsonObject,
    ObjectList,
    WatchEvent,
    plural_of,
)
from nrirp.adapters.kubernetes.errors import ClusterError, Unreachable, failure

WATCH_SECONDS = 300
"""How long the server keeps one watch open (``timeoutSeconds``); lightkube then watches
again from the last version it saw."""

NodeResourceTopology = create_global_resource(NRT_GROUP, NRT_VERSION, NRT_KIND, NRT_PLURAL)
_config_resources: dict[str, Any] = {}


def config_resource(kind: str) -> Any:
    """lightkube's generic resource class for the ``config.nri`` kind (made once)."""
    found = _config_resources.get(kind)
    if found is None:
        found = create_namespaced_resource(CONFIG_GROUP, CONFIG_VERSION, kind, plural_of(kind))
        _config_resources[kind] = found
    return found


def client_config(kubeconfig: str | None) -> SingleConfig:
    """``kubeconfig``'s current context, else the in-cluster service account (the token is
    re-read when it rotates). Raises :class:`ClusterError` when neither is usable."""
    from lightkube.core.exceptions import ConfigError

    try:
        config = (
            KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_service_account()
        )
        single = config.get()
    except (ConfigError, KeyError, OSError) as exc:
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster service account"
        raise ClusterError(f"no usable {where}: {exc}") from exc
    if single is None:
        raise ClusterError(f"kubeconfig {kubeconfig} has no current context")
    return single


def _raise_on_error(_exc: Exception, _count: int) -> OnErrorResult:
    return OnErrorResult(OnErrorAction.RAISE)


class LightkubeCluster:
    """:class:`~nrirp.adapters.kubernetes.cluster.ClusterApi` over a lightkube ``AsyncClient``
    (``config``: from :func:`client_config`; ``timeout``: seconds per request)."""

    def __init__(self, config: SingleConfig, *, timeout: float = 10.0) -> None:
        self.client = AsyncClient(
            config=config,
            timeout=httpx2.Timeout(timeout),
            field_manager=FIELD_MANAGER,
            trust_env=False,
        )

    # ------------------------------------------------------------------ reading
    async def list_configs(self, kind: str, namespace: str) -> ObjectList:
        resource = config_resource(kind)
        with _mapped("list", plural_of(kind)):
            listing = self.client.list(resource, namespace=namespace)
            items = [_plain(o) async for o in listing]
            return ObjectList(tuple(items), listing.resourceVersion)

    def watch_configs(
        self, kind: str, namespace: str, resource_version: str
    ) -> AsyncGenerator[WatchEvent, None]:
        return self._watch(config_resource(kind), plural_of(kind), resource_version, namespace)

    async def list_node(self, name: str) -> ObjectList:
        with _mapped("list", "nodes"):
            listing = self.client.list(Node, fields={"metadata.name": name})
            items = [_plain(o) async for o in listing]
            return ObjectList(tuple(items), listing.resourceVersion)

    def watch_node(self, name: str, resource_version: str) -> AsyncGenerator[WatchEvent, None]:
        return self._watch(Node, "nodes", resource_version, None, {"metadata.name": name})

    async def _watch(
        self,
        resource: Any,
        plural: str,
        since: str,
        namespace: str | None,
        fields: Mapping[str, str] | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        generic = self.client._client  # lightkube's watch() cannot ask for bookmarks
        params: dict[str, Any] = {
            "timeoutSeconds": WATCH_SECONDS,
            "resourceVersion": since or None,
            "allowWatchBookmarks": "true",
        }
        if fields:
            params["fieldSelector"] = ",".join(f"{k}={v}" for k, v in fields.items())
        with _mapped("watch", plural):
            request = generic.prepare_request(
                "list", res=resource, namespace=namespace, watch=True, params=params
            )
            stream = generic.watch(request, on_error=_raise_on_error)
            try:
                async for kind, obj in stream:
                    yield WatchEvent(str(kind), _plain(obj))
            finally:
                with contextlib.suppress(Exception):
                    await stream.aclose()

    # ------------------------------------------------------------------ writing
    async def patch_config_status(
        self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None:
        resource = config_resource(kind).Status
        with _mapped("patch", f"{plural_of(kind)}/status"):
            await self.client.patch(
                resource, name, dict(patch), namespace=namespace, patch_type=PatchType.MERGE
            )

    async def apply_topology(self, document: Mapping[str, Any]) -> None:
        name = str(document["metadata"]["name"])
        with _mapped("patch", NRT_PLURAL):
            await self.client.patch(
                NodeResourceTopology,
                name,
                dict(document),
                patch_type=PatchType.APPLY,
                force=True,
            )

    async def close(self) -> None:
        await self.client.close()


def _body_text(response: httpx2.Response) -> str:
    """The error body, when it was read: lightkube raises a watch's error status as a plain
    ``HTTPStatusError`` after closing the unread stream, so only the status line is left."""
    try:
        return response.text[:300]
    except httpx2.ResponseNotRead:
        return f"{response.request.method} {response.request.url.path}"


def _plain(obj: Any) -> JsonObject:
    """A lightkube object as the API's JSON."""
    to_dict = getattr(obj, "to_dict", None)
    result = to_dict() if callable(to_dict) else dict(obj)
    return result if isinstance(result, dict) else dict(result)


@contextlib.contextmanager
def _mapped(verb: str, resource: str) -> Any:
    """Turn lightkube's and httpx's failures into the agent's errors."""
    try:
        yield
    except ApiError as exc:
        status = exc.status
        raise failure(
            int(status.code or 0),
            str(status.reason or ""),
            str(status.message or ""),
            verb=verb,
            resource=resource,
        ) from exc
    except httpx2.HTTPStatusError as exc:
        response = exc.response
        raise failure(
            response.status_code,
            response.reason_phrase,
            _body_text(response),
            verb=verb,
            resource=resource,
        ) from exc
    except (httpx2.TransportError, OSError) as exc:
        raise Unreachable(
            f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        ) from exc
