"""Deciding without a daemon: the engine built in the exec client, on the persisted state.

Each invocation is a new process, and the policy needs the whole node: so the client takes
the state directory's lock (waiting for other invocations and failing after ``conf.timeout``
seconds), builds the engine (hardware discovery, the policy and its configuration from
``conf``), restores the state the previous invocation saved, handles the request exactly as
the daemon would (``V01Handler``, decisions written into cgroups), saves the state, and
releases the lock. Correct, but it pays discovery and restore on every container start; the
daemon answers in a fraction of that (bench/bench_nri_v01.py).
"""

from __future__ import annotations

import time

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.engine_api.updates import RoutedRuntimeUpdates
from nrirp.adapters.nri_v01.conf import PluginConf
from nrirp.adapters.nri_v01.enforce import CgroupEnforcer
from nrirp.adapters.nri_v01.handler import V01Handler, V01Outcome
from nrirp.adapters.nri_v01.protocol import Request, RequestError
from nrirp.adapters.nri_v01.stale import CgroupPresence
from nrirp.adapters.storage import FileStateStore, StateDirectoryInUseError
from nrirp.adapters.system import configure_logging
from nrirp.app.embed import Engine
from nrirp.domain.config import ConfigError
from nrirp.domain.pipeline import OperationFailedError, StateRestoreError
from nrirp.domain.ports.state_store import StateStoreError

LOCK_POLL_SECONDS = 0.005


def _lock(store: FileStateStore, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            store.lock()
            return
        except StateDirectoryInUseError as exc:
            if time.monotonic() >= deadline:
                raise StateStoreError(
                    f"{exc} for more than {timeout:g}s (a daemon that holds it should answer on "
                    "its engine API socket; is conf.socket right?)"
                ) from None
            time.sleep(LOCK_POLL_SECONDS)


def decide_standalone(request: Request, conf: PluginConf) -> V01Outcome:
    """Handle ``request`` in this process; errors become the outcome's ``error``."""
    if not conf.policy:
        return V01Outcome(
            f"no engine API answers at {conf.socket} and conf.policy is not set: "
            "deciding without the daemon needs the policy (and its config) in conf"
        )
    configure_logging("warning", "text")
    store = FileStateStore(conf.state_dir, background=False)
    try:
        _lock(store, conf.timeout)
    except StateStoreError as exc:
        return V01Outcome(str(exc))
    try:
        return _decide(request, conf, store)
    except RequestError as exc:  # the request's spec (conf was checked before): as the daemon
        return V01Outcome(f"bad request: {exc}")
    except ConfigError as exc:  # several problems, one per line: one line for the runtime
        return V01Outcome(_one_line(f"conf: {exc}"))
    except (StateRestoreError, StateStoreError) as exc:
        return V01Outcome(f"state {conf.state_dir}: {exc}")
    except OperationFailedError as exc:
        return V01Outcome(f"policy {conf.policy}: {exc.reason}")
    except Exception as exc:
        # policy modules, hardware discovery, config files: each names its problem
        return V01Outcome(_one_line(f"{type(exc).__name__}: {exc}"))
    finally:
        store.close()


def _one_line(text: str) -> str:
    """``text`` on one line, as the runtime logs and reports it: a header ending in ``:``
    followed by indented problems ``a`` and ``b`` becomes ``header: a; b``."""
    head, *rest = [line.strip() for line in text.splitlines() if line.strip()] or [""]
    if not rest:
        return head
    return f"{head} " + "; ".join(rest) if head.endswith(":") else "; ".join([head, *rest])


def _decide(request: Request, conf: PluginConf, store: FileStateStore) -> V01Outcome:
    host = CgroupfsHostControl(conf.cgroup_root)
    updates = RoutedRuntimeUpdates()
    engine = Engine.build(
        conf.policy,
        runtime_updates=updates,
        config=conf.config,
        config_file=conf.config_file or None,
        sysfs_root=conf.sysfs_root,
        state_store=store,
        host_control=host,
        policy_modules=conf.policy_modules or None,
    )
    try:
        engine.start()
        handler = V01Handler(
            engine.manager, CgroupEnforcer(host), CgroupPresence(host), updates.capture
        )
        outcome = handler.handle(request)
        handler.enforce(updates.take())  # made on another thread meanwhile (policy timers)
        return outcome
    finally:
        engine.close()
