"""``mmrobust tamper --executor ray``: one Ray task per source, the manifest on the driver.

The driver plans the build as a local build does (discovery, hashes, frame
counts, the donor pool, resume keys), then :class:`RaySourceMap` runs
``build_source`` for each source as a Ray task. A task writes its clips with
the same temporary file + rename as a local build, in the driver's working
directory, so outputs are byte-identical to a local build of the same command
(same seeds, same donors: both are drawn from the plan, not from where a
task runs; and the same encoder thread count, ``BuildConfig.threads``, fixed
rather than taken from the node's cores). The driver appends ``manifest.jsonl`` as results arrive and writes
``errors.jsonl``. Before the first task, every node that could run one is
asked whether it sees every planned source and donor file (a node whose data
mount is an empty folder stops the build in one line, before anything is
written). A task whose worker or node dies is retried by Ray
(``MAX_TASK_RETRIES``); its half-written temporary files are removed once
every task has finished.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError
from rich.console import Console

from mmrobust.distributed import RayOptions
from mmrobust.distributed.nodelocal import unreadable_here
from mmrobust.distributed.session import (
    RaySession,
    check_paths,
    in_dir,
    ray_resource_args,
    ray_session,
    worker_request,
)
from mmrobust.plugins import load_plugins
from mmrobust.tamper.builder import (
    BuildConfig,
    BuildReport,
    PoolVideo,
    SourcePlan,
    SourceResult,
    _remove_stale_temps,
    build_source,
)
from mmrobust.tamper.manifest import BuildError, ManifestEntry

MAX_TASK_RETRIES = 3
"""Times Ray re-runs a source whose worker process or node died."""


def _build_remote(
    plan: SourcePlan,
    config: BuildConfig,
    out_dir: Path,
    pool: list[PoolVideo],
    done: dict[str, ManifestEntry],
    cwd: str,
) -> tuple[SourceResult, str, str]:
    """On a worker: ``build_source`` in the driver's working directory; ``(result, node ip,
    node id)``.

    A source this node cannot see or read (its mount lost after the check) is not built: its
    error names the node, so it does not read as a bad file (a re-run builds it again, as
    any source with no clip in the manifest)."""
    load_plugins()  # as the job's setup hook (distributed.session.SETUP_HOOK) did
    ip = ray.util.get_node_ip_address()
    with in_dir(cwd):
        why = unreadable_here(plan.path)
        if why is not None:
            reason = f"Ray node {ip} {why} {plan.path} (the driver does; node-local)"
            result = SourceResult(
                source=str(plan.path), errors=[BuildError(source=str(plan.path), reason=reason)]
            )
        else:
            result = build_source(plan, config, out_dir, pool, done)
    node = ray.get_runtime_context().get_node_id()
    return result, ip, node


_build_task = ray.remote(_build_remote)


def planned_files(plans: Sequence[SourcePlan], pool: Sequence[PoolVideo]) -> list[str]:
    """The files a build reads: each planned source and each donor, once, in plan order."""
    seen: dict[str, None] = {}
    for path in [*(p.path for p in plans), *(v.path for v in pool)]:
        seen.setdefault(str(path), None)
    return list(seen)


class RaySourceMap:
    """A ``tamper.builder.SourceMap`` that builds each source as a Ray task.

    Attributes:
        tasks: sources built at once (at most; Ray queues the rest).
        request: Ray resources each task reserves.
        nodes: sources built per node ip (this build).
        node_ids: the Ray nodes that built a source.
        failed: sources that failed on every try.
    """

    def __init__(self, session: RaySession, request: Mapping[str, float], tasks: int) -> None:
        self.session = session
        self.request = dict(request)
        self.tasks = max(1, tasks)
        self.nodes: dict[str, int] = {}
        self.node_ids: set[str] = set()
        self.failed = 0

    def __call__(
        self,
        plans: Sequence[SourcePlan],
        config: BuildConfig,
        out_dir: Path,
        pool: Sequence[PoolVideo],
        done: Mapping[str, ManifestEntry],
    ) -> Iterator[SourceResult]:
        """Build ``plans`` on the cluster; yield each source's result as it completes.

        Before the first task, every node that could run one is asked whether it sees every
        planned source and donor file (not only the folders named on the command line: a
        node whose data mount is empty still has the folder).

        Raises:
            WorkerPathError: a node cannot see one of these files (names the node, the first
                file and how many more).
        """
        check_paths(self.session, self.request, planned_files(plans, pool))
        task = _build_task.options(
            max_retries=MAX_TASK_RETRIES,
            retry_exceptions=False,
            runtime_env=self.session.runtime_env(),
            **ray_resource_args(self.request),
        )
        config_ref, pool_ref, done_ref = ray.put(config), ray.put(list(pool)), ray.put(dict(done))
        pending: dict[Any, SourcePlan] = {}
        todo = iter(plans)
        finished = False
        try:
            while True:
                while len(pending) < 2 * self.tasks:
                    plan = next(todo, None)
                    if plan is None:
                        break
                    pending[
                        task.remote(
                            plan,
                            config_ref,
                            out_dir,
                            pool_ref,
                            done_ref,
                            self.session.cwd,
                        )
                    ] = plan
                if not pending:
                    finished = True
                    return
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                for ref in ready:
                    plan = pending.pop(ref)
                    try:
                        result, ip, node_id = ray.get(ref)
                    except RayError as exc:  # the source failed on every try: one source lost
                        self.failed += 1
                        text = str(exc).strip()
                        reason = f"worker failed: {type(exc).__name__}: "
                        reason += text.splitlines()[0] if text else ""
                        yield SourceResult(
                            source=str(plan.path),
                            errors=[BuildError(source=str(plan.path), reason=reason)],
                        )
                        continue
                    self.nodes[ip] = self.nodes.get(ip, 0) + 1
                    self.node_ids.add(node_id)
                    yield result
        finally:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            if finished:  # no task is writing any more: drop what dead workers left half-written
                _remove_stale_temps(out_dir)

    def describe(self) -> str:
        """One line: tasks at once, resources and where the sources were built."""
        where = ", ".join(f"{ip}: {n}" for ip, n in sorted(self.nodes.items())) or "none"
        asks = ", ".join(f"{k}={v:g}" for k, v in self.request.items())
        return (
            f"ray: up to {self.tasks} sources at once ({asks} each); "
            f"built on {len(self.node_ids)} node(s) ({where})"
        )


@contextlib.contextmanager
def ray_source_map(
    options: RayOptions,
    *,
    sources: Sequence[str | Path],
    out_dir: str | Path,
    donors: Sequence[str | Path] = (),
) -> Iterator[RaySourceMap]:
    """Connect to Ray, check that every node that may run a task sees the sources and donors
    and can write ``out_dir``, and yield the source map for ``tamper.builder.build``.

    Raises:
        WorkerPathError: a node cannot see a source or write the build folder.
        ValueError: Ray unreachable, or no node has the resources a task asks for.
    """
    created = not Path(out_dir).exists()
    try:
        with ray_session(options) as session:
            request = worker_request(options, gpus=options.gpus_per_worker or 0.0)
            Path(out_dir).mkdir(parents=True, exist_ok=True)  # for the workers' write probe
            # a path the driver lacks is a per-source error, as in a local build
            seen = [p for p in [*sources, *donors] if Path(p).exists()]
            check_paths(session, request, seen, writable=[out_dir])
            tasks = options.replicas or max(1, session.slots(request))
            yield RaySourceMap(session, request, tasks)
    finally:
        if created:  # nothing built: leave no empty folder, as a local build
            with contextlib.suppress(OSError):
                Path(out_dir).rmdir()


def build_on_ray(
    sources: Sequence[str | Path],
    out_dir: Path,
    config: BuildConfig,
    options: RayOptions,
    *,
    quiet: bool = False,
    console: Console | None = None,
) -> BuildReport:
    """``mmrobust tamper --executor ray``: the local build's progress bar and summary, with
    every source built as a Ray task, and one line saying where they were built.

    Raises:
        WorkerPathError, ValueError: as :func:`ray_source_map`.
    """
    from mmrobust.tamper.console import build_with_progress

    con = console or Console(stderr=True)
    with ray_source_map(options, sources=sources, out_dir=out_dir, donors=config.donors) as tasks:
        report = build_with_progress(
            sources, out_dir, config, console=con, quiet=quiet, map_sources=tasks
        )
        if not quiet:
            con.print(tasks.describe(), highlight=False, soft_wrap=True)
    return report


__all__ = [
    "MAX_TASK_RETRIES",
    "RaySourceMap",
    "build_on_ray",
    "planned_files",
    "ray_source_map",
]
