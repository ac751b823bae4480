"""``expect:`` checks of a workload step: how they are read, and their verdict after a replay."""

from __future__ import annotations

import asyncio

import pytest

from nrirp.app.simulator import (
    ReplayResult,
    WorkloadError,
    build_simulator,
    parse_workload,
    replay,
    replay_document,
    replay_result,
    replay_table,
)
from nrirp.app.simulator.expect import Expectation, SetCheck
from nrirp.domain.cpuset import CPUSet


def simulate(text: str, policy: str = "topology-aware", machine: str = "box-16") -> ReplayResult:
    workload = parse_workload(text, name="test")
    container = build_simulator(policy, machine=machine)
    container.core.resource_manager().start(container.core.policy_config())
    steps = asyncio.run(asyncio.wait_for(replay(container, workload), 60))
    return replay_result(container, workload, steps, hardware=machine, config_file=None)


# box-16 with the default config: cpu 0 is reserved; 4 NUMA nodes of 4 CPUs (0-3 .. 12-15)
PODS = """
- createPod:
    name: db
    containers:
      - name: postgres
        resources: {limits: {cpu: 2, memory: 1Gi}}
  expect:
    - {container: db/postgres, cpus: {count: 2, within: 4-7}, mems: "1", state: running}
    - {container: db/postgres, pool: "NUMA node #1"}
    - {pool: "NUMA node #1", shared: 6-7, containers: [db/postgres]}
    - {pool: "socket #0", reserved: "0", isolated: {count: 0}, mems: 0-1}
- createPod:
    name: web
    containers:
      - name: nginx
        resources: {requests: {cpu: 500m, memory: 64Mi}}
  expect:
    - container: default/web/nginx
      cpus: {disjointFrom: [db/postgres]}
      mems: {within: 0-3}
"""


def test_checks_that_hold_pass_the_step() -> None:
    result = simulate(PODS)
    for step in result.steps:
        assert step.as_expected and step.failed_checks == ()
        assert all(c.ok for c in step.checks)
    assert [c.subject for c in result.steps[0].checks] == [
        "container default/db/postgres",
        "container default/db/postgres",
        "pool NUMA node #1",
        "pool socket #0",
    ]
    assert "expect: 4 checks held" in replay_table(result)
    assert result.unexpected == ()


WRONG = """
- createPod:
    name: db
    containers:
      - name: postgres
        resources: {limits: {cpu: 2, memory: 1Gi}}
  expect:
    - {container: db/postgres, cpus: 0-1, mems: {count: 2}}
    - {container: db/postgres, cpus: {within: 8-15, disjointFrom: [db/postgres]}}
    - {container: db/postgres, pool: "socket #1", state: stopped}
    - {container: db/nobody, cpus: "0"}
    - {pool: "NUMA node #1", shared: 4-7, containers: [db/other]}
    - {pool: "NUMA node #9", shared: "1"}
    - {container: db/postgres, refused: true}
"""


def test_a_check_that_does_not_hold_fails_the_step_with_a_diff() -> None:
    result = simulate(WRONG)
    (step,) = result.steps
    assert step.ok and not step.as_expected and result.unexpected == (step,)
    problems = {c.number: c.problems for c in step.checks}
    assert problems[1] == ("cpus: expected 0-1, got 4-5", "mems: expected count 2, got 1 (1)")
    assert problems[2] == (
        "cpus: expected within 8-15, got 4-5 (4-5 outside)",
        "cpus: expected disjoint from default/db/postgres's (4-5), got 4-5 (4-5 in both)",
    )
    assert problems[3] == (
        "state: expected stopped, got running",
        "pool: expected socket #1, got NUMA node #1",
    )
    assert problems[4] == ("no such container in the runtime",)
    assert problems[5] == (
        "shared: expected 4-7, got 6-7",
        "containers: missing default/db/other; also default/db/postgres",
    )
    assert problems[6][0].startswith("no pool named 'NUMA node #9' (pools: root, socket #0, ")
    # a refused check makes the step one that must fail: it did not
    assert problems[7] == ("expected to be refused, it was not",)
    assert step.unmet_expectation == "the step was expected to fail"
    table = replay_table(result)
    assert "EXPECT FAILED: 7 of 7 checks" in table
    assert "    [1] container default/db/postgres cpus: expected 0-1, got 4-5" in table
    assert table.rstrip().endswith("1 step: 0 failed; 1 not as expected (step 1)")
    doc = replay_document(result)["steps"][0]
    assert doc["checks"][0] == {
        "number": 1,
        "subject": "container default/db/postgres",
        "ok": False,
        "problems": ["cpus: expected 0-1, got 4-5", "mems: expected count 2, got 1 (1)"],
    }
    assert doc["as_expected"] is False and doc["expected_error"] is True


REFUSALS = """
- createPod:
    name: big
    containers:
      - name: ok
        resources: {limits: {cpu: 100m, memory: 64Mi}}
      - name: huge
        resources: {limits: {cpu: 40, memory: 1Gi}}
  expect:
    - {container: big/huge, refused: "no pool has 40 exclusive CPUs"}
    - {container: big/ok, state: running}
- updateContainer:
    pod: big
    container: ok
    resources: {limits: {cpu: 30, memory: 64Mi}}
  expect:
    - {container: big/ok, refused: true}
- createPod:
    name: big2
    containers:
      - name: huge
        resources: {limits: {cpu: 40, memory: 1Gi}}
  expect:
    - {container: big2/huge, refused: "some other reason"}
"""


def test_refusals_are_checked_by_container_and_reason() -> None:
    result = simulate(REFUSALS)
    first, update, other = result.steps
    assert not first.ok and first.as_expected and first.expected_error is True
    assert all(c.ok for c in first.checks)
    # an update the policy refuses: the check names the container
    assert not update.ok and update.as_expected and update.checks[0].ok
    assert "no pool has 30 exclusive CPUs" in update.errors[0]
    (wrong,) = other.checks
    assert not wrong.ok and wrong.problems[0].startswith(
        "refused, but not with 'some other reason': "
    )
    assert "no pool has 40 exclusive CPUs" in wrong.problems[0]


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ("{cpus: 0-3}", "name the subject: 'container', 'pool' or 'balloon'"),
        ("{container: db}", "invalid container 'db': expected POD/CONTAINER or"),
        ("{container: db/c}", "nothing to check of a container"),
        ("{container: db/c, shared: 0-3}", "not a check of a container"),
        ("{pool: root, state: running}", "not a check of a pool"),
        ("{balloon: 'x[0]', reserved: '0'}", "not a check of a balloon"),
        ("{container: db/c, cpus: {within: x}}", "expected a cpu list such as '0-3,8'"),
        ("{container: db/c, cpus: {count: -1}}", "expected a number >= 0"),
        ("{container: db/c, cpus: {size: 2}}", "unknown field (expected equals, within"),
        ("{container: db/c, cpus: {}}", "give at least one of equals, within"),
        ("{container: db/c, cpus: {disjointFrom: [x]}}", "invalid container 'x'"),
        ("{container: db/c, refused: yes, cpus: '1'}", "a refused container has nothing else"),
        ("{container: db/c, refused: 3}", "expected true or text"),
        ("{container: db/c, pool: a, balloon: b}", "give 'pool' or 'balloon', not both"),
        ("{pool: root, containers: [x]}", "invalid container 'x'"),
    ],
)
def test_bad_checks_are_refused_with_their_path(check: str, message: str) -> None:
    text = f"- sleep: 0s\n  expect: [{check}]\n"
    with pytest.raises(WorkloadError) as err:
        parse_workload(text, name="w.yaml")
    assert message in str(err.value)
    assert "steps[0].expect[0]" in str(err.value) and "(step 1)" in str(err.value)


def test_set_checks_read_a_cpu_list_or_a_mapping() -> None:
    (step,) = parse_workload(
        "- sleep: 0s\n  expect:\n"
        "    - {container: p/c, cpus: '0-3', mems: 1}\n"
        "    - {container: p/c, cpus: {equals: '', within: 0-7, count: 0, disjointFrom: q/d}}\n"
    ).steps
    first, second = step.expect
    assert first == Expectation(
        container="p/c",
        cpus=SetCheck(equals=CPUSet.parse("0-3")),
        mems=SetCheck(equals=CPUSet.of(1)),
    )
    assert second.cpus == SetCheck(
        equals=CPUSet(), within=CPUSet.parse("0-7"), count=0, disjoint_from=("q/d",)
    )
    assert first.cpus is not None and first.cpus.to_config() == "0-3"
    assert second.cpus is not None and second.cpus.to_config() == {
        "equals": "",
        "within": "0-7",
        "count": 0,
        "disjointFrom": ["q/d"],
    }
