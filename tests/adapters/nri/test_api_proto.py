"""Our NRI api.proto checked against the Go NRI 0.6.1 api.proto and the v0.7 ... v0.12.2 facts.

The Go proto comes from Debian trixie's golang-github-containerd-nri-dev (fetched and cached by
tests.support.debian); it is compiled with grpc_tools.protoc into its own descriptor pool so it
never meets our generated module in the default pool. The newer additions are tables typed from
docs/nri-protocol.md section 3. Descriptors are compared as FileDescriptorProto messages because
those carry label/type/type_name as plain data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import grpc_tools
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import Message
from grpc_tools import protoc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.nri.gen import api_pb2
from tests.support import debian

PKG = "nri.pkg.api.v1alpha1"
GO_PACKAGE = "golang-github-containerd-nri-dev"
GO_PROTO = Path("usr/share/gocode/src/github.com/containerd/nri/pkg/api/api.proto")

FDP = descriptor_pb2.FieldDescriptorProto
DescriptorProto = descriptor_pb2.DescriptorProto
FileDescriptorProto = descriptor_pb2.FileDescriptorProto

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT32_MAX, UINT64_MAX = 2**32 - 1, 2**64 - 1


# ------------------------------------------------------------------------------------------------
# Helpers: compiling the Go proto and describing descriptors
# ------------------------------------------------------------------------------------------------


def strip_gogoproto(source: str) -> str:
    """Drop the gogoproto import and every ``(gogoproto.*)`` option from a .proto source."""
    source = re.sub(r'^\s*import\s+"[^"]*gogo\.proto"\s*;\s*$', "", source, flags=re.M)
    source = re.sub(r"^\s*option\s+\(gogoproto\.\w+\)\s*=\s*[^;]*;\s*$", "", source, flags=re.M)

    def clean_brackets(match: re.Match[str]) -> str:
        kept = [
            opt.strip()
            for opt in match.group(1).split(",")
            if opt.strip() and not opt.strip().startswith("(gogoproto.")
        ]
        return f" [{', '.join(kept)}]" if kept else ""

    return re.sub(r"\s*\[([^\]]*)\]", clean_brackets, source)


def compile_proto(source: str, name: str, workdir: Path) -> FileDescriptor:
    """Compile ``source`` with grpc_tools' protoc and load it into a fresh descriptor pool."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / name).write_text(source)
    out = workdir / "descriptors.pb"
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{workdir}",
        f"-I{include}",
        f"--descriptor_set_out={out}",
        "--include_imports",
        name,
    ]
    assert protoc.main(args) == 0, f"protoc failed on {name}"
    pool = descriptor_pool.DescriptorPool()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(file_proto)
    return pool.FindFileByName(name)


def as_proto(fd: FileDescriptor) -> FileDescriptorProto:
    proto = FileDescriptorProto()
    fd.CopyToProto(proto)
    return proto


def all_messages(fdp: FileDescriptorProto) -> dict[str, DescriptorProto]:
    """Every message, nested ones and map entries included, by full name."""
    found: dict[str, DescriptorProto] = {}

    def walk(prefix: str, messages: Iterable[DescriptorProto]) -> None:
        for msg in messages:
            full = f"{prefix}.{msg.name}"
            found[full] = msg
            walk(full, msg.nested_type)

    walk(fdp.package, fdp.message_type)
    return found


def all_enums(fdp: FileDescriptorProto) -> dict[str, dict[str, int]]:
    """Every enum, top-level and nested, by full name: value name -> number."""
    found = {f"{fdp.package}.{e.name}": {v.name: v.number for v in e.value} for e in fdp.enum_type}
    for full, msg in all_messages(fdp).items():
        for e in msg.enum_type:
            found[f"{full}.{e.name}"] = {v.name: v.number for v in e.value}
    return found


SCALARS = {
    FDP.TYPE_STRING: "string",
    FDP.TYPE_BYTES: "bytes",
    FDP.TYPE_BOOL: "bool",
    FDP.TYPE_INT32: "int32",
    FDP.TYPE_INT64: "int64",
    FDP.TYPE_UINT32: "uint32",
    FDP.TYPE_UINT64: "uint64",
}


def describe(
    field: descriptor_pb2.FieldDescriptorProto, messages: dict[str, DescriptorProto]
) -> str:
    """Render a field's wire shape in the doc's notation: ``*T`` repeated, ``map<K,V>``,
    ``enum E`` for enums, bare names for messages (relative to the package)."""
    local = field.type_name.removeprefix(f".{PKG}.")
    repeated = field.label == FDP.LABEL_REPEATED
    if field.type == FDP.TYPE_MESSAGE:
        entry = messages[field.type_name.lstrip(".")]
        if entry.options.map_entry:
            key, value = entry.field
            return f"map<{describe(key, messages)},{describe(value, messages)}>"
        base = local
    elif field.type == FDP.TYPE_ENUM:
        base = f"enum {local}"
    else:
        base = SCALARS[field.type]
    return f"*{base}" if repeated else base


def field_identity(field: descriptor_pb2.FieldDescriptorProto) -> tuple[object, ...]:
    return (
        field.number,
        FDP.Type.Name(field.type),
        FDP.Label.Name(field.label),
        field.type_name,
        field.proto3_optional,
        field.HasField("oneof_index"),
    )


@pytest.fixture(scope="module")
def ours() -> FileDescriptorProto:
    return as_proto(api_pb2.DESCRIPTOR)


@pytest.fixture(scope="module")
def go_file(tmp_path_factory: pytest.TempPathFactory) -> FileDescriptor:
    """The Go NRI 0.6.1 api.proto, compiled into a private descriptor pool."""
    # A failed download raises DebianFetchError: the dependent tests error out, they never skip.
    tree = debian.fetch("trixie", [GO_PACKAGE])
    source = (tree / GO_PROTO).read_text()
    compiled = compile_proto(strip_gogoproto(source), "api.proto", tmp_path_factory.mktemp("go"))
    assert compiled.pool is not descriptor_pool.Default()
    return compiled


@pytest.fixture(scope="module")
def go(go_file: FileDescriptor) -> FileDescriptorProto:
    return as_proto(go_file)


# ------------------------------------------------------------------------------------------------
# Conformance with the Go NRI 0.6.1 api.proto
# ------------------------------------------------------------------------------------------------


def test_go_proto_is_the_expected_api(go: FileDescriptorProto) -> None:
    # Guards the comparisons below against passing vacuously on an empty or wrong file.
    assert go.package == PKG
    assert go.syntax == "proto3"
    names = {m.name for m in go.message_type}
    assert {"PodSandbox", "Container", "ContainerAdjustment", "LinuxResources"} <= names
    assert len(names) >= 40
    assert {s.name for s in go.service} == {"Runtime", "Plugin"}


def test_same_package_and_syntax(ours: FileDescriptorProto, go: FileDescriptorProto) -> None:
    assert (ours.package, ours.syntax) == (go.package, go.syntax)
    assert not [d for d in ours.dependency if "gogo" in d]


def test_every_go_message_and_field_exists_identically(
    ours: FileDescriptorProto, go: FileDescriptorProto
) -> None:
    our_messages = all_messages(ours)
    problems: list[str] = []
    checked = 0
    for name, go_msg in all_messages(go).items():
        our_msg = our_messages.get(name)
        if our_msg is None:
            problems.append(f"message {name} is missing")
            continue
        if our_msg.options.map_entry != go_msg.options.map_entry:
            problems.append(f"message {name}: map_entry differs")
        our_fields = {f.name: f for f in our_msg.field}
        for go_field in go_msg.field:
            checked += 1
            our_field = our_fields.get(go_field.name)
            if our_field is None:
                problems.append(f"{name}.{go_field.name} is missing")
            elif field_identity(our_field) != field_identity(go_field):
                problems.append(
                    f"{name}.{go_field.name}: ours {field_identity(our_field)}"
                    f" != go {field_identity(go_field)}"
                )
    assert not problems, "\n".join(problems)
    assert checked > 100


def test_every_go_enum_value_exists_identically(
    ours: FileDescriptorProto, go: FileDescriptorProto
) -> None:
    our_enums = all_enums(ours)
    problems: list[str] = []
    for name, go_values in all_enums(go).items():
        our_values = our_enums.get(name)
        if our_values is None:
            problems.append(f"enum {name} is missing")
            continue
        for value, number in go_values.items():
            if (name, value) == (f"{PKG}.Event", "LAST"):
                continue  # the end sentinel moved from 12 to 15 in v0.10; checked below
            if our_values.get(value) != number:
                problems.append(f"{name}.{value}: ours {our_values.get(value)} != go {number}")
    assert not problems, "\n".join(problems)
    assert all_enums(go)[f"{PKG}.Event"]["LAST"] == 12
    assert our_enums[f"{PKG}.Event"]["LAST"] == 15


def test_every_go_service_method_exists_identically(
    ours: FileDescriptorProto, go: FileDescriptorProto
) -> None:
    our_services = {s.name: {m.name: m for m in s.method} for s in ours.service}
    problems: list[str] = []
    for service in go.service:
        methods = our_services.get(service.name, {})
        for go_method in service.method:
            our_method = methods.get(go_method.name)
            if our_method is None:
                problems.append(f"{service.name}.{go_method.name} is missing")
                continue
            for attr in ("input_type", "output_type", "client_streaming", "server_streaming"):
                if getattr(our_method, attr) != getattr(go_method, attr):
                    problems.append(f"{service.name}.{go_method.name}: {attr} differs")
    assert not problems, "\n".join(problems)


def test_go_encoded_request_parses_identically_in_ours(go_file: FileDescriptor) -> None:
    """A message built with the Go 0.6.1 schema decodes to the same values with ours."""
    go_cls = message_factory.GetMessageClass(
        go_file.message_types_by_name["CreateContainerRequest"]
    )
    go_req: Any = go_cls()  # built from a runtime descriptor: no static type
    go_req.pod.id = "pod-1"
    go_req.pod.labels["app"] = "web"
    go_req.container.id = "ctr-1"
    go_req.container.state = 1
    go_req.container.linux.oom_score_adj.value = 0
    go_req.container.linux.resources.memory.limit.value = 1 << 30
    go_req.container.linux.resources.cpu.cpus = "0-3"
    go_req.container.rlimits.add(type="RLIMIT_NOFILE", hard=1024, soft=512)
    ours = api_pb2.CreateContainerRequest.FromString(go_req.SerializeToString())
    assert ours.pod.labels == {"app": "web"}
    assert ours.container.state == api_pb2.CONTAINER_CREATED
    assert ours.container.linux.HasField("oom_score_adj")
    assert ours.container.linux.resources.memory.limit.value == 1 << 30
    assert ours.container.linux.resources.cpu.cpus == "0-3"
    assert ours.container.rlimits[0].soft == 512
    assert ours.SerializeToString(deterministic=True) == go_req.SerializeToString(
        deterministic=True
    )

    # The other way round, an old runtime keeps what it knows and carries the rest as unknown
    # fields, so re-encoding loses nothing.
    new = full_create_container_request()
    old: Any = go_cls.FromString(new.SerializeToString())
    assert old.container.linux.resources.cpu.cpus == "2,4-7"
    assert api_pb2.CreateContainerRequest.FromString(old.SerializeToString()) == new


# ------------------------------------------------------------------------------------------------
# The v0.7 ... v0.12.2 surface, typed from docs/nri-protocol.md section 3
# ------------------------------------------------------------------------------------------------

# Fields added to messages that already exist in 0.6.1: field -> (number, shape).
ADDED_FIELDS: dict[str, dict[str, tuple[int, str]]] = {
    "RegisterPluginRequest": {"NRI_version": (3, "string")},
    "ConfigureRequest": {
        "registration_timeout": (4, "int64"),
        "request_timeout": (5, "int64"),
        "NRI_version": (6, "string"),
    },
    "SynchronizeRequest": {"more": (3, "bool")},
    "SynchronizeResponse": {"more": (2, "bool")},
    "PodSandbox": {"ips": (10, "*string")},
    "Container": {
        "created_at": (14, "int64"),
        "started_at": (15, "int64"),
        "finished_at": (16, "int64"),
        "exit_code": (17, "int32"),
        "status_reason": (18, "string"),
        "status_message": (19, "string"),
        "CDI_devices": (20, "*CDIDevice"),
        "user": (21, "User"),
        "image": (22, "Image"),
    },
    "LinuxContainer": {
        "io_priority": (6, "LinuxIOPriority"),
        "seccomp_profile": (7, "SecurityProfile"),
        "seccomp_policy": (8, "LinuxSeccomp"),
        "sysctl": (9, "map<string,string>"),
        "net_devices": (10, "map<string,LinuxNetDevice>"),
        "scheduler": (11, "LinuxScheduler"),
        "rdt": (12, "LinuxRdt"),
    },
    "LinuxResources": {"pids": (8, "LinuxPids")},
    "ContainerAdjustment": {"CDI_devices": (8, "*CDIDevice"), "args": (9, "*string")},
    "LinuxContainerAdjustment": {
        "oom_score_adj": (4, "OptionalInt"),
        "io_priority": (5, "LinuxIOPriority"),
        "seccomp_policy": (6, "LinuxSeccomp"),
        "namespaces": (7, "*LinuxNamespace"),
        "sysctl": (8, "map<string,string>"),
        "net_devices": (9, "map<string,LinuxNetDevice>"),
        "scheduler": (10, "LinuxScheduler"),
        "rdt": (11, "LinuxRdt"),
        "memory_policy": (12, "LinuxMemoryPolicy"),
    },
}

_POD = {"pod": (1, "PodSandbox")}
_POD_CONTAINER = {"pod": (1, "PodSandbox"), "container": (2, "Container")}

# Messages that do not exist in 0.6.1, with their complete field lists.
NEW_MESSAGES: dict[str, dict[str, tuple[int, str]]] = {
    "RunPodSandboxRequest": _POD,
    "UpdatePodSandboxRequest": {
        "pod": (1, "PodSandbox"),
        "overhead_linux_resources": (2, "LinuxResources"),
        "linux_resources": (3, "LinuxResources"),
    },
    "PostUpdatePodSandboxRequest": _POD,
    "StopPodSandboxRequest": _POD,
    "RemovePodSandboxRequest": _POD,
    "PostCreateContainerRequest": _POD_CONTAINER,
    "StartContainerRequest": _POD_CONTAINER,
    "PostStartContainerRequest": _POD_CONTAINER,
    "PostUpdateContainerRequest": _POD_CONTAINER,
    "RemoveContainerRequest": _POD_CONTAINER,
    **{
        f"{event}Response": {}
        for event in (
            "RunPodSandbox",
            "UpdatePodSandbox",
            "PostUpdatePodSandbox",
            "StopPodSandbox",
            "RemovePodSandbox",
            "PostCreateContainer",
            "StartContainer",
            "PostStartContainer",
            "PostUpdateContainer",
            "RemoveContainer",
        )
    },
    "ValidateContainerAdjustmentRequest": {
        "pod": (1, "PodSandbox"),
        "container": (2, "Container"),
        "adjust": (3, "ContainerAdjustment"),
        "update": (4, "*ContainerUpdate"),
        "owners": (5, "OwningPlugins"),
        "plugins": (6, "*PluginInstance"),
    },
    "ValidateContainerAdjustmentResponse": {"reject": (1, "bool"), "reason": (2, "string")},
    "PluginInstance": {"name": (1, "string"), "index": (2, "string")},
    "OwningPlugins": {"owners": (1, "map<string,FieldOwners>")},
    "FieldOwners": {
        "simple": (1, "map<int32,string>"),
        "compound": (2, "map<int32,CompoundFieldOwners>"),
    },
    "CompoundFieldOwners": {"owners": (1, "map<string,string>")},
    "CDIDevice": {"name": (1, "string")},
    "LinuxPids": {"limit": (1, "int64")},
    "User": {"uid": (1, "uint32"), "gid": (2, "uint32"), "additional_gids": (3, "*uint32")},
    "Image": {"name": (1, "string"), "digest": (2, "string"), "config_digest": (3, "string")},
    "SecurityProfile": {
        "profile_type": (1, "enum SecurityProfile.ProfileType"),
        "localhost_ref": (2, "string"),
    },
    "LinuxIOPriority": {"class_": (1, "enum IOPrioClass"), "priority": (2, "int32")},
    "LinuxSeccomp": {
        "default_action": (1, "string"),
        "default_errno": (2, "OptionalUInt32"),
        "architectures": (3, "*string"),
        "flags": (4, "*string"),
        "listener_path": (5, "string"),
        "listener_metadata": (6, "string"),
        "syscalls": (7, "*LinuxSyscall"),
    },
    "LinuxSyscall": {
        "names": (1, "*string"),
        "action": (2, "string"),
        "errno_ret": (3, "OptionalUInt32"),
        "args": (4, "*LinuxSeccompArg"),
    },
    "LinuxSeccompArg": {
        "index": (1, "uint32"),
        "value": (2, "uint64"),
        "value_two": (3, "uint64"),
        "op": (4, "string"),
    },
    "LinuxNetDevice": {"name": (1, "string")},
    "LinuxScheduler": {
        "policy": (1, "enum LinuxSchedulerPolicy"),
        "nice": (2, "int32"),
        "priority": (3, "int32"),
        "flags": (4, "*enum LinuxSchedulerFlag"),
        "runtime": (5, "uint64"),
        "deadline": (6, "uint64"),
        "period": (7, "uint64"),
    },
    "LinuxRdt": {
        "clos_id": (1, "OptionalString"),
        "schemata": (2, "OptionalRepeatedString"),
        "enable_monitoring": (3, "OptionalBool"),
        "remove": (4, "bool"),
    },
    "LinuxMemoryPolicy": {
        "mode": (1, "enum MpolMode"),
        "nodes": (2, "string"),
        "flags": (3, "*enum MpolFlag"),
    },
    "OptionalRepeatedString": {"value": (1, "*string")},
}

# Enums that do not exist in 0.6.1, complete. The doc gives the Field values by their Go names;
# ours are FIELD_ + the same letters in upper snake case (checked separately).
NEW_ENUMS: dict[str, dict[str, int]] = {
    "SecurityProfile.ProfileType": {"RUNTIME_DEFAULT": 0, "UNCONFINED": 1, "LOCALHOST": 2},
    "IOPrioClass": {
        "IOPRIO_CLASS_NONE": 0,
        "IOPRIO_CLASS_RT": 1,
        "IOPRIO_CLASS_BE": 2,
        "IOPRIO_CLASS_IDLE": 3,
    },
    "LinuxSchedulerPolicy": {
        "SCHED_NONE": 0,
        "SCHED_OTHER": 1,
        "SCHED_FIFO": 2,
        "SCHED_RR": 3,
        "SCHED_BATCH": 4,
        "SCHED_ISO": 5,
        "SCHED_IDLE": 6,
        "SCHED_DEADLINE": 7,
    },
    "LinuxSchedulerFlag": {
        "SCHED_FLAG_RESET_ON_FORK": 0,
        "SCHED_FLAG_RECLAIM": 1,
        "SCHED_FLAG_DL_OVERRUN": 2,
        "SCHED_FLAG_KEEP_POLICY": 3,
        "SCHED_FLAG_KEEP_PARAMS": 4,
        "SCHED_FLAG_UTIL_CLAMP_MIN": 5,
        "SCHED_FLAG_UTIL_CLAMP_MAX": 6,
    },
    "MpolMode": {
        "MPOL_DEFAULT": 0,
        "MPOL_PREFERRED": 1,
        "MPOL_BIND": 2,
        "MPOL_INTERLEAVE": 3,
        "MPOL_LOCAL": 4,
        "MPOL_PREFERRED_MANY": 5,
        "MPOL_WEIGHTED_INTERLEAVE": 6,
    },
    "MpolFlag": {"MPOL_F_STATIC_NODES": 0, "MPOL_F_RELATIVE_NODES": 1, "MPOL_F_NUMA_BALANCING": 2},
}

# Field enum values in the doc's Go spelling, in number order.
GO_FIELD_NAMES = [
    "None",  # [v0.10] 0-33
    "Annotations",
    "Mounts",
    "OciHooks",
    "Devices",
    "CdiDevices",
    "Env",
    "Args",
    "MemLimit",
    "MemReservation",
    "MemSwapLimit",
    "MemKernelLimit",
    "MemTCPLimit",
    "MemSwappiness",
    "MemDisableOomKiller",
    "MemUseHierarchy",
    "CPUShares",
    "CPUQuota",
    "CPUPeriod",
    "CPURealtimeRuntime",
    "CPURealtimePeriod",
    "CPUSetCPUs",
    "CPUSetMems",
    "PidsLimit",
    "HugepageLimits",
    "BlockioClass",
    "RdtClass",
    "CgroupsUnified",
    "CgroupsPath",
    "OomScoreAdj",
    "Rlimits",
    "IoPriority",
    "SeccompPolicy",
    "Namespace",
    "Sysctl",  # [v0.11] 34-39
    "LinuxNetDevices",
    "LinuxSched",
    "RdtClosID",
    "RdtSchemata",
    "RdtEnableMonitoring",
    "MemoryPolicy",  # [v0.12] 40
]

EVENTS = {
    "UNKNOWN": 0,
    "RUN_POD_SANDBOX": 1,
    "STOP_POD_SANDBOX": 2,
    "REMOVE_POD_SANDBOX": 3,
    "CREATE_CONTAINER": 4,
    "POST_CREATE_CONTAINER": 5,
    "START_CONTAINER": 6,
    "POST_START_CONTAINER": 7,
    "UPDATE_CONTAINER": 8,
    "POST_UPDATE_CONTAINER": 9,
    "STOP_CONTAINER": 10,
    "REMOVE_CONTAINER": 11,
    "UPDATE_POD_SANDBOX": 12,
    "POST_UPDATE_POD_SANDBOX": 13,
    "VALIDATE_CONTAINER_ADJUSTMENT": 14,
    "LAST": 15,
}

# Services, complete: method -> (request, response).
RUNTIME_METHODS = {
    "RegisterPlugin": ("RegisterPluginRequest", "Empty"),
    "UpdateContainers": ("UpdateContainersRequest", "UpdateContainersResponse"),
}
PLUGIN_METHODS = {
    "Configure": ("ConfigureRequest", "ConfigureResponse"),
    "Synchronize": ("SynchronizeRequest", "SynchronizeResponse"),
    "Shutdown": ("Empty", "Empty"),
    "CreateContainer": ("CreateContainerRequest", "CreateContainerResponse"),
    "UpdateContainer": ("UpdateContainerRequest", "UpdateContainerResponse"),
    "StopContainer": ("StopContainerRequest", "StopContainerResponse"),
    "StateChange": ("StateChangeEvent", "Empty"),
    "ValidateContainerAdjustment": (
        "ValidateContainerAdjustmentRequest",
        "ValidateContainerAdjustmentResponse",
    ),
    **{
        name: (f"{name}Request", f"{name}Response")
        for name in (
            "RunPodSandbox",
            "UpdatePodSandbox",
            "PostUpdatePodSandbox",
            "StopPodSandbox",
            "RemovePodSandbox",
            "PostCreateContainer",
            "StartContainer",
            "PostStartContainer",
            "PostUpdateContainer",
            "RemoveContainer",
        )
    },
}


def _fields(ours: FileDescriptorProto, message: str) -> dict[str, tuple[int, str]]:
    messages = all_messages(ours)
    return {f.name: (f.number, describe(f, messages)) for f in messages[f"{PKG}.{message}"].field}


@pytest.mark.parametrize(
    ("message", "field", "number", "shape"),
    [(m, f, n, s) for m, fields in ADDED_FIELDS.items() for f, (n, s) in fields.items()],
)
def test_added_field(
    ours: FileDescriptorProto, message: str, field: str, number: int, shape: str
) -> None:
    assert _fields(ours, message).get(field) == (number, shape)


@pytest.mark.parametrize(("message", "fields"), sorted(NEW_MESSAGES.items()))
def test_new_message_is_exactly(
    ours: FileDescriptorProto, message: str, fields: dict[str, tuple[int, str]]
) -> None:
    assert _fields(ours, message) == fields


def test_messages_are_exactly_go_plus_documented_additions(
    ours: FileDescriptorProto, go: FileDescriptorProto
) -> None:
    go_fields = {m.name: {f.name for f in m.field} for m in go.message_type}
    our_fields = {m.name: {f.name for f in m.field} for m in ours.message_type}
    assert set(our_fields) == set(go_fields) | set(NEW_MESSAGES)
    assert not set(go_fields) & set(NEW_MESSAGES)
    for name, names in go_fields.items():
        assert our_fields[name] == names | set(ADDED_FIELDS.get(name, {})), name


@pytest.mark.parametrize(
    ("message", "absent"), [("ConfigureResponse", 1), ("ContainerAdjustment", 1)]
)
def test_numbers_that_never_existed(ours: FileDescriptorProto, message: str, absent: int) -> None:
    numbers = {n for n, _ in _fields(ours, message).values()}
    assert absent not in numbers
    assert numbers  # the message is not empty: the hole is deliberate


def test_configure_response_events_is_field_2(ours: FileDescriptorProto) -> None:
    assert _fields(ours, "ConfigureResponse") == {"events": (2, "int32")}


@pytest.mark.parametrize(("enum", "values"), sorted(NEW_ENUMS.items()))
def test_new_enum_is_exactly(ours: FileDescriptorProto, enum: str, values: dict[str, int]) -> None:
    assert all_enums(ours)[f"{PKG}.{enum}"] == values


def test_field_enum_follows_the_go_names(ours: FileDescriptorProto) -> None:
    values = all_enums(ours)[f"{PKG}.Field"]
    by_number = {number: name for name, number in values.items()}
    assert sorted(by_number) == list(range(len(GO_FIELD_NAMES)))
    for number, go_name in enumerate(GO_FIELD_NAMES):
        ours_name = by_number[number]
        assert ours_name.startswith("FIELD_")
        assert ours_name.removeprefix("FIELD_").replace("_", "") == go_name.upper(), number
    assert api_pb2.FIELD_MEMORY_POLICY == 40
    assert api_pb2.FIELD_CPU_SET_CPUS == 21


def test_event_enum_and_valid_event_mask(ours: FileDescriptorProto) -> None:
    assert all_enums(ours)[f"{PKG}.Event"] == EVENTS
    # The runtime's ValidEvents = (1 << (LAST - 1)) - 1: 0x3FFF from v0.10 on.
    assert (1 << (api_pb2.LAST - 1)) - 1 == 0x3FFF


def test_enum_values_are_unique_across_the_package(ours: FileDescriptorProto) -> None:
    # protoc already refuses clashes in the package scope; this pins the Python side, where
    # top-level values become module attributes next to message classes.
    top = [v.name for e in ours.enum_type for v in e.value]
    assert len(top) == len(set(top))
    assert not set(top) & {m.name for m in ours.message_type}
    assert (api_pb2.SCHED_IDLE, api_pb2.IOPRIO_CLASS_IDLE, api_pb2.UNKNOWN) == (6, 3, 0)


@pytest.mark.parametrize(
    ("service", "methods"), [("Runtime", RUNTIME_METHODS), ("Plugin", PLUGIN_METHODS)]
)
def test_service_is_exactly(
    ours: FileDescriptorProto, service: str, methods: dict[str, tuple[str, str]]
) -> None:
    (svc,) = [s for s in ours.service if s.name == service]
    got = {
        m.name: (m.input_type.removeprefix(f".{PKG}."), m.output_type.removeprefix(f".{PKG}."))
        for m in svc.method
    }
    assert got == methods
    assert not any(m.client_streaming or m.server_streaming for m in svc.method)
    assert api_pb2.DESCRIPTOR.services_by_name[service].full_name == f"{PKG}.{service}"


def test_io_priority_class_keeps_its_json_name() -> None:
    field = api_pb2.LinuxIOPriority.DESCRIPTOR.fields_by_name["class_"]
    assert (field.number, field.json_name) == (1, "class")


# ------------------------------------------------------------------------------------------------
# gogoproto stripping (0.6.1 has none; newer Go protos do)
# ------------------------------------------------------------------------------------------------

GOGO_SAMPLE = """
syntax = "proto3";
package nri.pkg.api.v1alpha1;
import "github.com/gogo/protobuf/gogoproto/gogo.proto";
option (gogoproto.goproto_getters_all) = false;
message M {
  string a = 1 [(gogoproto.customname) = "A", json_name = "aa"];
  repeated string b = 2 [(gogoproto.nullable) = false];
  int64 c = 3 [deprecated = true, (gogoproto.moretags) = "yaml:\\"c\\""];
}
"""


def test_strip_gogoproto_keeps_other_options_and_compiles(tmp_path: Path) -> None:
    stripped = strip_gogoproto(GOGO_SAMPLE)
    assert "gogo" not in stripped
    fields = {
        f.name: f
        for f in as_proto(compile_proto(stripped, "m.proto", tmp_path)).message_type[0].field
    }
    assert fields["a"].json_name == "aa"
    assert fields["b"].label == FDP.LABEL_REPEATED
    assert fields["c"].options.deprecated


# ------------------------------------------------------------------------------------------------
# Round trips
# ------------------------------------------------------------------------------------------------


def full_create_container_request() -> api_pb2.CreateContainerRequest:
    """A request using every kind of field: maps (scalar and message values), repeated scalars
    and messages, enums, Optional wrappers holding zero values, extreme integers."""
    api = api_pb2
    resources = api.LinuxResources(
        memory=api.LinuxMemory(
            limit=api.OptionalInt64(value=0),
            swap=api.OptionalInt64(value=INT64_MIN),
            swappiness=api.OptionalUInt64(value=0),
            disable_oom_killer=api.OptionalBool(value=False),
        ),
        cpu=api.LinuxCPU(
            shares=api.OptionalUInt64(value=UINT64_MAX),
            quota=api.OptionalInt64(value=-1),
            cpus="2,4-7",
            mems="0",
        ),
        hugepage_limits=[api.HugepageLimit(page_size="2MB", limit=0)],
        blockio_class=api.OptionalString(value=""),
        unified={"memory.high": "max", "cpu.weight": "100"},
        devices=[api.LinuxDeviceCgroup(allow=True, type="c", major=api.OptionalInt64(value=0))],
        pids=api.LinuxPids(limit=INT64_MAX),
    )
    return api.CreateContainerRequest(
        pod=api.PodSandbox(
            id="pod-1",
            labels={"app": "web", "": "empty-key"},
            annotations={"a/b": "c"},
            linux=api.LinuxPodSandbox(pod_resources=resources, cgroup_parent="/kubepods"),
            pid=UINT32_MAX,
            ips=["10.0.0.1", "fd00::1"],
        ),
        container=api.Container(
            id="ctr-1",
            state=api.CONTAINER_RUNNING,
            args=["sh", "-c", "ünïcödé"],
            env=["A=1", "B="],
            mounts=[api.Mount(destination="/d", type="bind", source="/s", options=["ro"])],
            hooks=api.Hooks(
                prestart=[api.Hook(path="/bin/true", timeout=api.OptionalInt(value=0))],
                poststop=[api.Hook(path="/bin/false", args=["x"], env=["E=1"])],
            ),
            linux=api.LinuxContainer(
                namespaces=[api.LinuxNamespace(type="network", path="/proc/1/ns/net")],
                devices=[
                    api.LinuxDevice(
                        path="/dev/null",
                        major=1,
                        minor=3,
                        file_mode=api.OptionalFileMode(value=0),
                        uid=api.OptionalUInt32(value=0),
                    )
                ],
                resources=resources,
                oom_score_adj=api.OptionalInt(value=0),
                io_priority=api.LinuxIOPriority(class_=api.IOPRIO_CLASS_BE, priority=4),
                seccomp_profile=api.SecurityProfile(
                    profile_type=api.SecurityProfile.LOCALHOST, localhost_ref="p.json"
                ),
                seccomp_policy=api.LinuxSeccomp(
                    default_errno=api.OptionalUInt32(value=0),
                    syscalls=[
                        api.LinuxSyscall(
                            names=["read"],
                            args=[api.LinuxSeccompArg(index=0, value=UINT64_MAX, op="SCMP_CMP_EQ")],
                        )
                    ],
                ),
                sysctl={"net.core.somaxconn": "1024"},
                net_devices={"eth1": api.LinuxNetDevice(name="net1")},
                scheduler=api.LinuxScheduler(
                    policy=api.SCHED_FIFO,
                    nice=-20,
                    flags=[api.SCHED_FLAG_RESET_ON_FORK, api.SCHED_FLAG_UTIL_CLAMP_MAX],
                    deadline=UINT64_MAX,
                ),
                rdt=api.LinuxRdt(
                    clos_id=api.OptionalString(value=""),
                    schemata=api.OptionalRepeatedString(value=[]),
                    enable_monitoring=api.OptionalBool(value=False),
                ),
            ),
            rlimits=[api.POSIXRlimit(type="RLIMIT_NOFILE", hard=UINT64_MAX, soft=0)],
            created_at=INT64_MIN,
            exit_code=-1,
            CDI_devices=[api.CDIDevice(name="vendor.com/gpu=0")],
            user=api.User(uid=0, gid=0, additional_gids=[0, UINT32_MAX]),
            image=api.Image(name="busybox", digest="sha256:00"),
        ),
    )


def test_create_container_request_round_trips() -> None:
    original = full_create_container_request()
    parsed = api_pb2.CreateContainerRequest.FromString(original.SerializeToString())
    assert parsed == original
    ctr = parsed.container
    # Wrappers holding zero values are still present after the trip ...
    assert ctr.linux.HasField("oom_score_adj")
    assert ctr.linux.oom_score_adj.value == 0
    memory = ctr.linux.resources.memory
    assert memory.HasField("limit")
    assert memory.HasField("swappiness")
    assert memory.HasField("disable_oom_killer")
    assert ctr.linux.resources.HasField("blockio_class")
    assert ctr.hooks.prestart[0].HasField("timeout")
    assert ctr.linux.devices[0].HasField("file_mode")
    assert ctr.linux.rdt.HasField("schemata")
    assert ctr.linux.rdt.HasField("clos_id")
    # ... and wrappers never set stay absent.
    assert not memory.HasField("reservation")
    assert not ctr.linux.resources.HasField("rdt_class")
    assert not ctr.linux.devices[0].HasField("gid")
    assert not ctr.hooks.poststop[0].HasField("timeout")
    # Maps, repeated values, enums and extreme integers come back as they went in.
    assert dict(parsed.pod.labels) == {"app": "web", "": "empty-key"}
    assert ctr.linux.net_devices["eth1"].name == "net1"
    assert list(ctr.linux.scheduler.flags) == [0, 6]
    assert ctr.linux.io_priority.class_ == api_pb2.IOPRIO_CLASS_BE
    assert ctr.linux.resources.cpu.shares.value == UINT64_MAX
    assert ctr.created_at == INT64_MIN
    assert list(ctr.user.additional_gids) == [0, UINT32_MAX]
    assert ctr.args[2] == "ünïcödé"


def test_zero_valued_wrapper_is_on_the_wire() -> None:
    # Field 1 (limit), length 0: the presence of the empty OptionalInt64 is what carries "set 0".
    assert api_pb2.LinuxMemory(limit=api_pb2.OptionalInt64(value=0)).SerializeToString() == (
        b"\x0a\x00"
    )
    assert api_pb2.LinuxMemory().SerializeToString() == b""


# Every Optional wrapper: (holder message, field name, value strategy).
WRAPPED_FIELDS: list[tuple[type[Message], str, st.SearchStrategy[object]]] = [
    (api_pb2.LinuxMemory, "limit", st.integers(INT64_MIN, INT64_MAX)),
    (api_pb2.LinuxMemory, "swappiness", st.integers(0, UINT64_MAX)),
    (api_pb2.LinuxMemory, "use_hierarchy", st.booleans()),
    (api_pb2.LinuxCPU, "period", st.integers(0, UINT64_MAX)),
    (api_pb2.LinuxResources, "rdt_class", st.text()),
    (api_pb2.LinuxContainer, "oom_score_adj", st.integers(INT64_MIN, INT64_MAX)),
    (api_pb2.LinuxDevice, "file_mode", st.integers(0, UINT32_MAX)),
    (api_pb2.LinuxDevice, "uid", st.integers(0, UINT32_MAX)),
    (api_pb2.LinuxRdt, "schemata", st.lists(st.text(max_size=8), max_size=4)),
]


@st.composite
def wrapped_values(draw: st.DrawFn) -> tuple[type[Message], str, object]:
    holder, field, values = draw(st.sampled_from(WRAPPED_FIELDS))
    return holder, field, draw(values)


# The first st.text() draw on a fresh machine builds Hypothesis' unicode tables (about a second).
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(wrapped_values())
def test_optional_wrappers_keep_presence_and_value(case: tuple[type[Message], str, object]) -> None:
    holder, field, value = case
    msg = holder()
    wrapper = getattr(msg, field)
    if isinstance(value, list):
        wrapper.value.extend(value)
    else:
        wrapper.value = value
    wrapper.SetInParent()  # present even when the value is the zero value
    parsed = holder.FromString(msg.SerializeToString())
    assert parsed.HasField(field)
    got = getattr(parsed, field).value
    assert (list(got) if isinstance(value, list) else got) == value
