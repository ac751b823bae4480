"""The wire-level fake behaves as kube-apiserver does where the agent depends on it (the
project's notes on the API); with KUBEBUILDER_ASSETS the same checks run on a real server."""

from __future__ import annotations

import json
from typing import Any

import httpx2

CR_PATH = "/apis/config.nri/v1alpha1/namespaces/kube-system/balloonspolicies"


def _cr(name: str = "default", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "config.nri/v1alpha1",
        "kind": "BalloonsPolicy",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": spec or {"reservedResources": {"cpu": "750m"}},
    }


def _status(response: httpx2.Response) -> dict[str, Any]:
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status"
    assert body["code"] == response.status_code
    return body


def test_custom_resources_only_at_their_group_version_plural_and_scope(apiserver: Any) -> None:
    with apiserver.admin_client() as http:
        assert http.post(CR_PATH, json=_cr()).status_code == 201
        assert http.get(f"{CR_PATH}/default").status_code == 200
        for wrong in (
            "/apis/config.nri/v1/namespaces/kube-system/balloonspolicies/default",
            "/apis/config.nri/v1alpha1/balloonspolicies/default",  # cluster scope
            "/apis/config.nri/v1alpha1/namespaces/kube-system/balloonpolicies/default",
            "/apis/nri.config/v1alpha1/namespaces/kube-system/balloonspolicies/default",
        ):
            response = http.get(wrong)
            assert response.status_code == 404, wrong
            assert _status(response)["reason"] == "NotFound"


def test_patch_types_and_status_subresource(apiserver: Any) -> None:
    with apiserver.admin_client() as http:
        created = http.post(CR_PATH, json=_cr()).json()
        assert created["metadata"]["generation"] == 1
        strategic = http.patch(
            f"{CR_PATH}/default",
            content=json.dumps({"spec": {"pinCPU": False}}),
            headers={"Content-Type": "application/strategic-merge-patch+json"},
        )
        assert strategic.status_code == 415
        assert _status(strategic)["reason"] == "UnsupportedMediaType"

        # status through the main resource is ignored
        merged = http.patch(
            f"{CR_PATH}/default",
            content=json.dumps({"spec": {"pinCPU": False}, "status": {"nodes": {"n": {}}}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).json()
        assert "status" not in merged and merged["metadata"]["generation"] == 2
        # status writes change only status and leave the generation
        status = {"nodes": {"n1": {"status": "Failure", "generation": 2, "errors": ["x"]}}}
        written = http.patch(
            f"{CR_PATH}/default/status",
            content=json.dumps({"status": status, "spec": {"pinCPU": True}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).json()
        assert written["status"] == status
        assert written["spec"]["pinCPU"] is False
        assert written["metadata"]["generation"] == 2
        # a merge patch removes errors only with an explicit null
        kept = http.patch(
            f"{CR_PATH}/default/status",
            content=json.dumps({"status": {"nodes": {"n1": {"status": "Success"}}}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).json()
        assert kept["status"]["nodes"]["n1"]["errors"] == ["x"]
        cleared = http.patch(
            f"{CR_PATH}/default/status",
            content=json.dumps({"status": {"nodes": {"n1": {"errors": None}}}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).json()
        assert "errors" not in cleared["status"]["nodes"]["n1"]
        # JSON patch (RFC 6902)
        patched = http.patch(
            f"{CR_PATH}/default",
            content=json.dumps([{"op": "replace", "path": "/spec/pinCPU", "value": True}]),
            headers={"Content-Type": "application/json-patch+json"},
        ).json()
        assert patched["spec"]["pinCPU"] is True and patched["metadata"]["generation"] == 3


def test_conflicts(apiserver: Any) -> None:
    with apiserver.admin_client() as http:
        first = http.post(CR_PATH, json=_cr()).json()
        again = http.post(CR_PATH, json=_cr())
        assert again.status_code == 409 and _status(again)["reason"] == "AlreadyExists"
        http.patch(
            f"{CR_PATH}/default",
            content=json.dumps({"spec": {"pinCPU": False}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
        stale = http.put(f"{CR_PATH}/default", json=first)  # an old resourceVersion
        assert stale.status_code == 409 and _status(stale)["reason"] == "Conflict"


def test_server_side_apply(apiserver: Any) -> None:
    path = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/n1"
    doc = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": "n1"},
        "topologyPolicies": ["balloons"],
        "zones": [{"name": "a", "type": "balloon"}],
    }
    apply = {"Content-Type": "application/apply-patch+yaml"}
    with apiserver.admin_client() as http:
        missing = http.patch(path, content=json.dumps(doc), headers=apply)
        assert missing.status_code == 400  # fieldManager is required
        made = http.patch(
            path, params={"fieldManager": "one"}, content=json.dumps(doc), headers=apply
        )
        assert made.status_code in (200, 201), made.text
        other = dict(doc, zones=[{"name": "b", "type": "balloon"}])
        conflict = http.patch(
            path, params={"fieldManager": "two"}, content=json.dumps(other), headers=apply
        )
        assert conflict.status_code == 409 and _status(conflict)["reason"] == "Conflict"
        forced = http.patch(
            path,
            params={"fieldManager": "two", "force": "true"},
            content=json.dumps(other),
            headers=apply,
        )
        assert forced.status_code == 200 and forced.json()["zones"][0]["name"] == "b"


def test_watch_from_a_version_with_bookmarks(apiserver: Any) -> None:
    with apiserver.admin_client() as http:
        http.post(CR_PATH, json=_cr("one")).raise_for_status()
        listed = http.get(CR_PATH).json()
        version = listed["metadata"]["resourceVersion"]
        assert isinstance(version, str)
        http.post(CR_PATH, json=_cr("two")).raise_for_status()
        events = []
        params = {
            "watch": "true",
            "resourceVersion": version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "2",
        }
        with http.stream("GET", CR_PATH, params=params, timeout=10) as stream:
            assert stream.status_code == 200
            for line in stream.iter_lines():
                if line:
                    events.append(json.loads(line))
        assert events[0]["type"] == "ADDED"
        assert events[0]["object"]["metadata"]["name"] == "two"
        assert all(e["type"] in ("ADDED", "BOOKMARK") for e in events)
