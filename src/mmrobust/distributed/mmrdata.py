"""``mmrobust mmr-data --executor ray``: model replicas generate, the driver writes the files.

Images go in blocks to the replica actors of ``distributed/pipeline.py`` (``Replica.mmr_image``: read the image, both
stages, parse, filter, all on the worker); the driver writes
``items/<key>.json`` as results arrive and the outputs in the order of the
images given, so they equal a local run's for the same replies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from mmrobust.distributed import RayOptions
from mmrobust.distributed.eval import RemoteModel, Replicas, start_replicas
from mmrobust.distributed.session import ray_session
from mmrobust.mmrdata.pipeline import (
    ItemResult,
    ItemStatus,
    MMRDataSummary,
    item_key,
    run_mmr_data,
)


def run_mmr_data_ray(
    images: Sequence[str | Path],
    model: str,
    model_args: dict[str, str],
    out_dir: str | Path,
    options: RayOptions,
    *,
    n_pairs: int = 4,
    resume: bool = True,
    on_item: Callable[[ItemResult, bool], None] | None = None,
) -> MMRDataSummary:
    """:func:`mmrobust.mmrdata.pipeline.run_mmr_data` with the model in Ray replicas.

    Raises:
        ValueError, WorkerPathError: Ray unreachable, no room for the replicas,
            a replica that cannot load the model or see the first image.
    """
    with ray_session(options) as session:
        replicas = start_replicas(session, options, model=model, model_args=model_args)
        try:
            return _run(replicas, images, out_dir, n_pairs, resume, on_item)
        finally:
            replicas.close()  # no actor of the run is left on the cluster


def _run(
    replicas: Replicas,
    images: Sequence[str | Path],
    out_dir: str | Path,
    n_pairs: int,
    resume: bool,
    on_item: Callable[[ItemResult, bool], None] | None,
) -> MMRDataSummary:
    """The run on started replicas: path check, images in blocks, the files on the driver."""
    first = next((str(p) for p in images if Path(p).exists()), None)
    if first is not None:
        replicas.check_paths([first])

    def map_images(todo: Sequence[Path], pairs: int) -> Iterator[tuple[Path, ItemResult]]:
        by_name = {str(p): p for p in todo}
        blocks = replicas.stream(
            list(by_name), method="mmr_image", args=(pairs,),
            concurrency=replicas.concurrency(),
        )  # fmt: skip
        for block in blocks:
            for name, result in block:
                image = by_name[name]
                if isinstance(result, Exception):
                    text = str(result).strip()
                    result = ItemResult(
                        key=item_key(image),
                        image=str(image),
                        n_pairs=pairs,
                        status=ItemStatus.MODEL_ERROR,
                        error=f"ray: {type(result).__name__}: "
                        + (text.splitlines()[0] if text else ""),
                    )
                yield image, result

    return run_mmr_data(
        images,
        RemoteModel.from_info(replicas.info),
        out_dir,
        n_pairs=n_pairs,
        resume=resume,
        on_item=on_item,
        map_images=map_images,
    )


__all__ = ["run_mmr_data_ray"]
