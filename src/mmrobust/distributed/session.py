"""Connecting to Ray, the cluster's nodes and resources, and the "can every worker see it" check.

``ray_session`` connects the driver to ``--ray-address`` (or ``RAY_ADDRESS``),
or starts a local Ray for the run, always without the dashboard; on exit it
disconnects (and stops the Ray it started). Paths: workers read and write
the same paths as the driver, so a cluster needs a filesystem shared by every
node at the same mount point; relative paths are resolved against the
driver's working directory on the worker too. ``check_paths`` runs one tiny
zero-CPU task on every node that could host a worker and fails early, with
the node and the path, when one of them cannot see an input or write an
output folder; a node lost while it is probed (``TaskUnschedulableError``) is
left out, not a traceback.

Deadline (issue 27 item 9): before ``ray.init`` (which retries for minutes
against a port that accepts connections but is not a Ray GCS),
``check_reachable`` opens the port and exchanges the HTTP/2 connection
preface with it, as any gRPC client does first; no reply within
``CONNECT_TIMEOUT_S`` is one line and exit 2. ``check_connection`` does it for
the address given and for the one ``ray.init`` will really try (Ray replaces
``127.0.0.1`` by the machine's outward address, where a loopback-only cluster
does not listen: ``ray.init`` then retried without a word for minutes).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from mmrobust.distributed import RayOptions, WorkerPathError

log = logging.getLogger(__name__)

LOCAL_OBJECT_STORE_BYTES = 256 * 2**20
"""Object store of a Ray started for one run: only rows, configs and manifests pass through it
(frames are decoded where they are used)."""

LOCAL_SYSTEM_CONFIG = {"prestart_worker_first_driver": False}
"""Ray settings of a Ray started for one run: no idle worker prestarted per CPU when the driver
connects (each is a Python process importing Ray, seconds of CPU, and the replicas, actors
with their own runtime environment, never use one)."""

FORWARDED_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HOME",
    "HF_HUB_CACHE",
    "MMROBUST_CACHE",
    "MMROBUST_PLUGINS",
)
"""Environment variables the driver passes to its workers when set (none is a secret: API keys
named by ``api_key_env`` must be set on the worker nodes themselves). ``PYTHONPATH`` goes
too, its entries made absolute (:func:`forwarded_env`), so a plugin the driver imports from
it is found on the workers (the shared filesystem)."""

SETUP_HOOK = "mmrobust.plugins.load_plugins"
"""What every Ray entry point of mmrobust calls first (``Replica.__init__``, the tamper and
perturb tasks): the plugins load in each worker before it takes work. It is not the job's
``worker_process_setup_hook``: any ``runtime_env`` makes Ray start each worker through
``setup_worker.py``, a second Python start-up with its own Ray import (about a CPU-second
per replica), so a run sets one only when it has variables to forward."""


def forwarded_env() -> dict[str, str]:
    """The variables of :data:`FORWARDED_ENV` that are set, and ``PYTHONPATH`` with its
    entries made absolute against the driver's working directory."""
    env = {k: os.environ[k] for k in FORWARDED_ENV if os.environ.get(k)}
    if os.environ.get("PYTHONPATH"):
        parts = [p for p in os.environ["PYTHONPATH"].split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in parts)
    return env


SHARED_FS_HINT = (
    "workers read and write the driver's paths: put data, outputs and local checkpoints "
    "on a shared filesystem mounted at the same path on every node (docs/scaling.md)"
)


@dataclass
class RaySession:
    """The driver's connection to a Ray cluster.

    Attributes:
        address: what the driver connected to (``"local"`` for a Ray started for the run).
        started: this session started (and will stop) the Ray it uses.
        cwd: the driver's working directory; workers resolve relative paths against it.
        env: environment variables passed to every worker (``FORWARDED_ENV`` that are set).
    """

    address: str
    started: bool
    cwd: str
    env: dict[str, str] = field(default_factory=dict)

    def runtime_env(self) -> dict[str, Any] | None:
        """The ``runtime_env`` of every actor and task (forwarded variables), or ``None``."""
        return {"env_vars": dict(self.env)} if self.env else None

    def cluster_resources(self) -> dict[str, float]:
        """Total resources of the alive nodes (``CPU``, ``GPU``, custom)."""
        return {str(k): float(v) for k, v in ray.cluster_resources().items()}

    def nodes(self) -> list[dict[str, Any]]:
        """The alive nodes, as ``ray.nodes()`` describes them."""
        return [n for n in ray.nodes() if n.get("Alive")]

    def slots(self, request: Mapping[str, float]) -> int:
        """How many workers asking ``request`` fit on the alive nodes at once (0: none)."""
        total = 0
        for node in self.nodes():
            have = node.get("Resources", {})
            fit = min(
                (math.floor(have.get(k, 0.0) / v + 1e-9) for k, v in request.items() if v > 0),
                default=0,
            )
            total += max(0, fit)
        return total

    def candidate_nodes(self, request: Mapping[str, float]) -> list[dict[str, Any]]:
        """Alive nodes that can host at least one worker asking ``request``."""
        return [
            n
            for n in self.nodes()
            if all(n.get("Resources", {}).get(k, 0.0) >= v for k, v in request.items() if v > 0)
        ]


def _init_kwargs(started: bool, env: Mapping[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "namespace": "mmrobust",
    }
    if env:
        kwargs["runtime_env"] = {"env_vars": dict(env)}
    if started:
        kwargs["object_store_memory"] = LOCAL_OBJECT_STORE_BYTES
        kwargs["_system_config"] = dict(LOCAL_SYSTEM_CONFIG)
    return kwargs


@contextlib.contextmanager
def ray_session(options: RayOptions) -> Iterator[RaySession]:
    """Connect to the cluster of ``options`` (or start a local Ray) for the duration of a run.

    A driver that is already connected (``ray.init`` called by a notebook) is
    reused and left connected.

    Raises:
        ValueError: the cluster cannot be reached (one line).
    """
    env = forwarded_env()
    address = options.address or os.environ.get("RAY_ADDRESS") or "local"
    if ray.is_initialized():
        yield RaySession("connected", started=False, cwd=os.getcwd(), env=env)
        return
    started = address == "local"
    if started:  # its raylet, and so every worker, inherits this environment: pass what differs
        env = {k: v for k, v in env.items() if os.environ.get(k) != v}
    if not started:
        check_connection(address)
    try:
        ray.init(address=address, **_init_kwargs(started, env))
    except (ConnectionError, RuntimeError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"cannot connect to Ray at {address}: {reason}") from None
    try:
        yield RaySession(address, started=started, cwd=os.getcwd(), env=env)
    finally:
        ray.shutdown()


CONNECT_TIMEOUT_S = 10.0
"""How long the driver tries to open the cluster's port and get a gRPC answer from it before it
gives up (``ray.init`` itself retries for minutes)."""

_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
"""The HTTP/2 client connection preface and an empty SETTINGS frame (RFC 9113 section 3.4):
a gRPC server (Ray's GCS, the Ray Client server) answers with its own SETTINGS frame."""


def check_reachable(address: str, timeout: float | None = None) -> None:
    """Open a TCP connection to a ``[ray://]host:port`` address and check that a gRPC server
    answers there (the HTTP/2 preface), all within ``timeout`` seconds
    (default ``CONNECT_TIMEOUT_S``).

    Raises:
        ValueError: not ``host:port``, nothing accepts connections there, or what does
            sends no gRPC reply in time (one line).
    """
    if address == "auto":
        return  # ray.init finds a cluster started on this machine with `ray start`
    limit = CONNECT_TIMEOUT_S if timeout is None else timeout
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"bad Ray address {address!r}: expected HOST:PORT (e.g. 10.0.0.2:6379)")
    try:
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=limit)
    except OSError as exc:
        raise ValueError(
            f"cannot connect to Ray at {address}: {exc.strerror or exc}; "
            "is `ray start --head` running there (and the port open)?"
        ) from None
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        sock.close()  # a TLS cluster answers only after a TLS handshake: ray.init checks it
        return
    with sock:
        head = b""
        try:
            sock.sendall(_HTTP2_PREFACE)
            while len(head) < 9 and (chunk := sock.recv(9 - len(head))):
                head += chunk
        except OSError:  # timed out, or reset
            pass
    if len(head) < 9 or head[3] != 4:  # a frame header whose type is SETTINGS
        raise ValueError(
            f"cannot connect to Ray at {address}: the port accepts connections but no Ray "
            f"answers there within {limit:g} s; give the address `ray start --head` printed"
        )


LOOPBACK_FIX = (
    "for a cluster on loopback only set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 for `ray start` "
    "and mmrobust alike, else start Ray with --node-ip-address set to an address both reach "
    "(docs/scaling.md)"
)


def ray_target(address: str) -> str | None:
    """The ``host:port`` ``ray.init`` connects to for ``address`` when that is not ``address``
    itself: Ray replaces a loopback host (``127.0.0.1``, ``localhost``, ``::1``) by this
    machine's outward address unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``. ``None`` for
    ``ray://`` and ``auto`` addresses, and when Ray keeps the address."""
    if address == "auto" or "://" in address:
        return None
    try:
        from ray._private.services import canonicalize_bootstrap_address

        tried = canonicalize_bootstrap_address(address)
    except Exception:  # a private Ray function: absent or changed, no rewrite is assumed
        return None
    if not tried:
        return None
    given_host, _, given_port = address.rpartition(":")
    host, _, port = str(tried).rpartition(":")
    if host.strip("[]") == given_host.strip("[]") and port == given_port:
        return None
    return str(tried)


def check_connection(address: str) -> None:
    """:func:`check_reachable` on ``address``, then on the address ``ray.init`` will really try
    (:func:`ray_target`), each within ``CONNECT_TIMEOUT_S``: where Ray rewrites a loopback
    address to one where no Ray answers, ``ray.init`` retries for minutes without a word.

    Raises:
        ValueError: one line naming the address Ray tries and the fix
            (:data:`LOOPBACK_FIX`) when the rewrite is what fails.
    """
    tried = ray_target(address)
    try:
        check_reachable(address)
    except ValueError as exc:
        if tried is None:
            raise
        raise ValueError(
            f"{exc} (Ray itself connects to {tried}, this machine's address, not {address}: "
            f"{LOOPBACK_FIX})"
        ) from None
    if tried is None:
        return
    try:
        check_reachable(tried)
    except ValueError:
        raise ValueError(
            f"cannot connect to Ray at {address}: Ray replaces a loopback address by this "
            f"machine's and tries {tried}, where no Ray answers within "
            f"{CONNECT_TIMEOUT_S:g} s; {LOOPBACK_FIX}"
        ) from None


def worker_request(options: RayOptions, *, gpus: float = 0.0) -> dict[str, float]:
    """Ray resources one worker reserves: ``CPU``, ``GPU`` (when > 0) and custom resources."""
    request = {"CPU": float(options.cpus_per_worker)}
    if gpus > 0:
        request["GPU"] = float(gpus)
    request.update({k: float(v) for k, v in options.resources.items()})
    return request


def ray_resource_args(request: Mapping[str, float]) -> dict[str, Any]:
    """``request`` as the ``num_cpus`` / ``num_gpus`` / ``resources`` keywords of ``.options``."""
    custom = {k: v for k, v in request.items() if k not in ("CPU", "GPU")}
    return {
        "num_cpus": request.get("CPU", 0.0),
        "num_gpus": request.get("GPU", 0.0),
        "resources": custom,
    }


def resolve(cwd: str, path: str | os.PathLike[str]) -> str:
    """``path`` as the driver means it: relative paths against the driver's ``cwd``."""
    return os.path.join(cwd, os.fspath(path))


@contextlib.contextmanager
def in_dir(cwd: str) -> Iterator[None]:
    """Run a task body in the driver's working directory (when this node has it)."""
    old = os.getcwd()
    if os.path.isdir(cwd):
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old)


def probe_paths(
    cwd: str, paths: Sequence[str], writable: Sequence[str] = ()
) -> tuple[str, list[str]]:
    """On a worker: ``(node ip, problems)`` for ``paths`` that do not exist or folders not writable."""
    problems = [f"cannot see {p}" for p in paths if not os.path.exists(resolve(cwd, p))]
    for folder in writable:
        probe = Path(resolve(cwd, folder)) / f".mmrobust-write-check-{uuid.uuid4().hex}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            problems.append(f"cannot write to {folder} ({exc.strerror or exc})")
    return ray.util.get_node_ip_address(), problems


def _probe_remote(cwd: str, paths: list[str], writable: list[str]) -> tuple[str, list[str]]:
    return probe_paths(cwd, paths, writable)


_probe_task = ray.remote(num_cpus=0, max_retries=0)(_probe_remote)


def raise_path_problems(reports: Sequence[tuple[str, list[str]]]) -> None:
    """Raise :class:`WorkerPathError` for the first node with a problem (one line)."""
    for ip, problems in reports:
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise WorkerPathError(f"Ray worker on {ip} {problems[0]}{more}; {SHARED_FS_HINT}")


def check_paths(
    session: RaySession,
    request: Mapping[str, float],
    paths: Sequence[str | os.PathLike[str]],
    writable: Sequence[str | os.PathLike[str]] = (),
    *,
    skip: Collection[str] = (),
) -> int:
    """Check on every node that can host a worker asking ``request`` that it sees ``paths``
    and can write into ``writable`` folders (one task pinned to each node).

    Args:
        skip: ids of nodes already checked (eval replicas check their own node).

    Returns:
        the number of nodes checked here (0 when every node was in ``skip``).

    A node that leaves the cluster while it is probed is left out (it will host no
    worker); the count returned is of the nodes that answered.

    Raises:
        WorkerPathError: a node cannot see a path or write a folder (names both).
        ValueError: no alive node has the resources a worker asks for, every such node
            left during the check, or the check failed on a node still alive (one line).
    """
    nodes = session.candidate_nodes(request)
    if not nodes:
        raise ValueError(
            f"no Ray node has the resources one worker asks for ({_fmt(request)}); "
            f"cluster: {_fmt(session.cluster_resources())}"
        )
    nodes = [n for n in nodes if n["NodeID"] not in skip]
    if not nodes:
        return 0
    refs = [
        _probe_task.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
            runtime_env=session.runtime_env(),
        ).remote(session.cwd, [os.fspath(p) for p in paths], [os.fspath(w) for w in writable])
        for n in nodes
    ]
    reports = []
    for node, ref in zip(nodes, refs, strict=True):
        try:
            reports.append(ray.get(ref))
        except RayError as exc:  # e.g. TaskUnschedulableError: the node left since it was listed
            if node["NodeID"] in {n["NodeID"] for n in session.nodes()}:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise ValueError(
                    f"the path check failed on Ray node {node.get('NodeManagerAddress', '?')}: "
                    f"{type(exc).__name__}{': ' + reason if reason else ''}"
                ) from None
            log.warning("Ray node %s left during the path check", node.get("NodeManagerAddress"))
    if not reports:
        raise ValueError("every Ray node that could host a worker left during the path check")
    raise_path_problems(reports)
    return len(reports)


def _fmt(resources: Mapping[str, float]) -> str:
    keep = {k: v for k, v in resources.items() if not k.startswith(("node:", "memory", "object"))}
    return ", ".join(f"{k}={v:g}" for k, v in sorted(keep.items())) or "nothing"


__all__ = [
    "FORWARDED_ENV",
    "LOCAL_OBJECT_STORE_BYTES",
    "SHARED_FS_HINT",
    "RaySession",
    "check_paths",
    "check_reachable",
    "in_dir",
    "probe_paths",
    "raise_path_problems",
    "ray_resource_args",
    "ray_session",
    "resolve",
    "worker_request",
]
