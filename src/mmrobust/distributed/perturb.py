"""``mmrobust perturb --executor ray``: one Ray task per source file, the files on the driver.

The driver plans the build as a local build does (names, seeds, resume); each source file's
jobs (its clean copy and every effect and severity) go to one Ray task, which makes the bytes
with :func:`mmrobust.perturb.build.render` and returns them. The driver writes every file
(temporary file + rename) and the manifest in the plan's order, so the output is
byte-identical to a local build (seeds come from the plan, clips are encoded with pinned
encoder threads). Before the first task every node that could run one is asked whether it
sees every source file; a task whose worker or node dies is retried by Ray.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import ray
from ray.exceptions import RayError

from mmrobust.distributed import RayOptions
from mmrobust.distributed.session import (
    check_paths,
    in_dir,
    ray_resource_args,
    ray_session,
    worker_request,
)
from mmrobust.perturb.plan import MediaJob
from mmrobust.plugins import load_plugins

MAX_TASK_RETRIES = 3
"""Times Ray re-runs a source whose worker process or node died."""

Made = tuple[str, bytes | None, dict[str, Any] | str]
"""``(job key, file bytes or None, details or the one-line error)``."""


def _source_remote(jobs: list[MediaJob], cwd: str) -> list[Made]:
    """On a worker: every file of one source, in the driver's working directory."""
    from mmrobust.media.errors import MediaError
    from mmrobust.perturb.build import render
    from mmrobust.perturb.video import decode_clip

    load_plugins()  # as the job's setup hook (distributed.session.SETUP_HOOK) did
    out: list[Made] = []
    with in_dir(cwd):
        try:
            for job in jobs:
                try:
                    data, details = render(job)
                except (MediaError, OSError, ValueError) as exc:
                    out.append((job.key, None, f"{type(exc).__name__}: {exc}".splitlines()[0]))
                else:
                    out.append((job.key, data, details))
        finally:
            decode_clip.cache_clear()
    return out


_source_task = ray.remote(_source_remote)


def perturb_on_ray(
    jobs: Sequence[MediaJob], options: RayOptions
) -> Iterator[tuple[MediaJob, bytes | None, dict[str, Any] | str]]:
    """Make ``jobs`` on the cluster, one task per source file; yield each job's result as its
    source's task completes (the caller writes the files).

    Raises:
        ValueError, WorkerPathError: Ray unreachable, a node that cannot see a source file.
    """
    groups: dict[str, list[MediaJob]] = {}
    for job in jobs:
        groups.setdefault(str(job.source), []).append(job)
    if not groups:
        return
    by_key = {job.key: job for job in jobs}
    with ray_session(options) as session:
        request = worker_request(options)
        check_paths(session, request, list(groups))
        task = _source_task.options(
            max_retries=MAX_TASK_RETRIES,
            retry_exceptions=False,
            runtime_env=session.runtime_env(),
            **ray_resource_args(request),
        )
        refs = {task.remote(group, session.cwd): group for group in groups.values()}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    made: list[Made] = ray.get(ref)
                except RayError as exc:
                    why = f"ray: {type(exc).__name__}"
                    made = [(job.key, None, why) for job in refs[ref]]
                for key, data, details in made:
                    yield by_key[key], data, details


__all__ = ["perturb_on_ray"]
