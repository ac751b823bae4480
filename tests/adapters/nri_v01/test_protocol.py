"""NRI v0.1 requests, results and the plugin conf, from the v0.1 types (types/v1/types.go):
every state, missing fields, garbage, results of earlier plugins, errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri_v01.conf import DEFAULT_SOCKET, parse_conf
from nrirp.adapters.nri_v01.protocol import (
    STATES,
    Request,
    RequestError,
    Result,
    Spec,
    error_result,
    parse_request,
)

# what containerd 1.6 writes for a container's create (client.go: json.Marshal(Request))
CONTAINERD_CREATE = {
    "conf": {"socket": "/run/nrirp/engine.sock"},
    "version": "0.1",
    "state": "create",
    "id": "c1",
    "sandboxID": "s1",
    "pid": 4242,
    "spec": {
        "resources": {"cpu": {"shares": 1024, "period": 100000}, "memory": {"limit": 67108864}},
        "namespaces": {"ipc": "/proc/41/ns/ipc", "pid": ""},
        "cgroupsPath": "/kubepods/burstable/podu1/c1",
        "annotations": {"io.kubernetes.cri.container-name": "app"},
    },
    "labels": {"io.kubernetes.pod.name": "web"},
    "results": [{"plugin": "clearcfs", "version": "0.1", "error": "", "metadata": {"a": "b"}}],
}


def request_with(**changes: object) -> bytes:
    data = dict(CONTAINERD_CREATE)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return json.dumps(data).encode()


def test_a_containerd_create_request_parses_field_by_field() -> None:
    request = parse_request(request_with())
    assert request.state == "create" and request.id == "c1" and request.sandbox_id == "s1"
    assert request.pid == 4242 and not request.is_sandbox
    assert request.spec.cgroups_path == "/kubepods/burstable/podu1/c1"
    assert request.spec.resources == CONTAINERD_CREATE["spec"]["resources"]  # type: ignore[index]
    assert request.spec.namespaces == {"ipc": "/proc/41/ns/ipc", "pid": ""}
    assert request.labels == {"io.kubernetes.pod.name": "web"}
    assert request.conf == {"socket": "/run/nrirp/engine.sock"}
    assert request.results == [Result("clearcfs", "0.1", "", {"a": "b"})]


@pytest.mark.parametrize("state", STATES)
def test_every_state_parses(state: str) -> None:
    assert parse_request(request_with(state=state)).state == state


def test_a_sandbox_request_is_one_whose_id_is_the_sandbox_id() -> None:
    assert parse_request(request_with(id="s1")).is_sandbox


def test_delete_needs_no_spec_and_no_labels() -> None:
    request = parse_request(request_with(state="delete", spec=None, labels=None, pid=None))
    assert request.spec == Spec() and request.labels == {} and request.pid == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": None}, "version: missing"),
        ({"version": "0.2"}, "version: '0.2' is not NRI 0.1"),
        ({"state": None}, "state: missing; expected one of create, delete, update, pause, resume"),
        ({"state": "setup"}, "state: 'setup'; expected one of"),
        ({"state": 1}, "state: expected a string, got a number"),
        ({"id": None}, "id: missing"),
        ({"id": ""}, "id: missing"),
        ({"pid": "12"}, "pid: expected an integer, got a string"),
        ({"pid": True}, "pid: expected an integer, got a boolean"),
        ({"spec": None}, "spec: missing (a create request carries the container's spec)"),
        ({"spec": []}, "spec: expected an object, got an array"),
        ({"spec": {"resources": 3}}, "spec.resources: expected an object, got a number"),
        ({"spec": {"cgroupsPath": 3}}, "spec.cgroupsPath: expected a string, got a number"),
        ({"spec": {"annotations": {"a": 1}}}, "spec.annotations.a: expected a string"),
        ({"labels": ["a"]}, "labels: expected an object of strings, got an array"),
        ({"conf": "x"}, "conf: expected an object, got a string"),
        ({"results": {}}, "results: expected an array, got an object"),
        ({"results": [{"plugin": 1}]}, "results[0].plugin: expected a string, got a number"),
        ({"results": [3]}, "results[0]: expected an object, got a number"),
    ],
)
def test_missing_and_wrong_fields_are_named(changes: dict[str, object], message: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(request_with(**changes))
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty request"),
        (b"  \n", "empty request"),
        (b"{", "request is not JSON: Expecting property name"),
        (b"[1, 2]", "request: expected a JSON object, got an array"),
        (b"null", "request: expected a JSON object, got null"),
        (b"\xff\xfe", "request is not UTF-8"),
        (b"[" * 100000 + b"]" * 100000, "request is not usable JSON: nested too deeply"),
        (b" " * (1 << 20) + b"{}", "request of 1048578 bytes is larger than 1048576"),
    ],
)
def test_garbage_is_a_request_error(data: bytes, message: str) -> None:
    with pytest.raises(RequestError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_request(data)


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_input_parses_or_is_a_request_error(data: bytes) -> None:
    try:
        request = parse_request(data)
    except RequestError as exc:
        assert str(exc)  # a message, never another exception
    else:
        assert request.state in STATES and request.id


def test_unknown_keys_are_ignored_like_gos_decoder() -> None:
    assert parse_request(request_with(future="x")).id == "c1"


def test_requests_round_trip_through_json() -> None:
    request = parse_request(request_with())
    assert parse_request(request.to_json()) == request
    sandbox = Request("create", "s1", sandbox_id="s1")
    assert parse_request(sandbox.to_json()) == sandbox


def test_results_are_what_skel_writes() -> None:
    result = parse_request(request_with()).new_result("nrirp")
    assert json.loads(result.to_json()) == {"plugin": "nrirp", "version": "0.1", "error": ""}
    result.metadata["cpus"] = "2-3"
    assert json.loads(result.to_json())["metadata"] == {"cpus": "2-3"}
    error = error_result("nrirp", "no CPUs left")
    assert json.loads(error.to_json()) == {
        "plugin": "nrirp",
        "version": "0.1",
        "error": "no CPUs left",
    }


def test_the_conf_defaults_and_its_keys() -> None:
    conf = parse_conf(None)
    assert conf.socket == DEFAULT_SOCKET and conf.mode == "auto" and conf.timeout == 10
    conf = parse_conf(
        {
            "socket": "/s",
            "mode": "standalone",
            "timeout": 2,
            "policy": "balloons",
            "config": {"a": 1},
            "stateDir": "/st",
            "sysfsRoot": "/sy",
            "cgroupRoot": "/cg",
            "policyModules": ["m"],
        }
    )
    assert (conf.socket, conf.mode, conf.timeout, conf.policy) == (
        "/s",
        "standalone",
        2.0,
        "balloons",
    )
    assert (conf.state_dir, conf.sysfs_root, conf.cgroup_root) == ("/st", "/sy", "/cg")
    assert conf.config == {"a": 1} and conf.policy_modules == ["m"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"polcy": "x"}, "conf.polcy: unknown key; known: socket, mode"),
        ({"mode": "both"}, "conf.mode: 'both'; expected one of auto, daemon, standalone"),
        ({"socket": ""}, "conf.socket: expected a non-empty string"),
        ({"timeout": 0}, "conf.timeout: expected seconds"),
        ({"timeout": "1"}, "conf.timeout: expected seconds"),
        ({"config": 3}, "conf.config: expected the policy configuration"),
        ({"policyModules": "m"}, "conf.policyModules: expected a list"),
        ({"config": {}, "configFile": "/f"}, "conf: give config or configFile, not both"),
    ],
)
def test_bad_conf_is_named(value: dict[str, object], message: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_conf(value)
    assert str(caught.value).startswith(message)
