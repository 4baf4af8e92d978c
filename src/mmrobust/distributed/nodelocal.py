"""Failures that come from one Ray node's view of the data, not from the sample.

A sample reaches a replica only when the driver sees its media file (the
loader makes a missing file a ``data_error``). When the replica's node then
cannot see or read that file (a data mount that is missing, empty or lost
mid-run), the ``media_error`` the processor gives is the node's, not the
sample's: :func:`node_local_failures` stores it as ``model_error``, a status a
re-run asks again (``store.TRANSIENT``, docs/failures.md), so a later run on
Ray or locally repairs it instead of keeping a wrong final row (issue 27 item 8).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mmrobust.status import Status


def unreadable_here(path: str | os.PathLike[str] | None) -> str | None:
    """Why this process cannot read the file ``path`` (``"cannot see"``, ``"cannot read"``),
    or ``None`` when it can (or there is no path)."""
    if path is None:
        return None
    if not os.path.isfile(path):
        return "cannot see"
    if not os.access(path, os.R_OK):
        return "cannot read"
    return None


def node_local_failures(rows: Sequence[Any], node_ip: str) -> list[Any]:
    """``rows`` (``StoredRow``) with each ``media_error`` whose file this node cannot see or
    read turned into a ``model_error`` (transient: a re-run, on Ray or locally, asks again)
    naming the node and the file. Other rows are returned unchanged.

    A sample reaches a replica only when the driver sees its media file (the loader makes a
    missing file a ``data_error``), so a file this node lacks is a node-local failure
    (a missing or stale mount), never a property of the sample.
    """
    out = []
    for row in rows:
        if row.status is Status.MEDIA_ERROR:
            path = row.sample.video if row.sample.video is not None else row.sample.image
            why = unreadable_here(path)
            if why is not None:
                row = replace(
                    row,
                    status=Status.MODEL_ERROR,
                    rule=Status.MODEL_ERROR.value,
                    error=f"ray: the node {node_ip} {why} {path} (the driver does; node-local: "
                    "a re-run asks again)",
                )
        out.append(row)
    return out


__all__ = ["node_local_failures", "unreadable_here"]
