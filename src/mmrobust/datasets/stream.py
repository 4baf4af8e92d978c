"""Samples read from their file each time they are needed: a dataset whose memory does not
grow with its number of samples.

:class:`SampleRows` is the ``Dataset.samples`` of a JSONL file: it holds one line number
(4 bytes) per sample and parses the sample again from the file on each pass (a
``Sequence[Sample]``: ``len``, iteration in file order, indexing, slicing). The file is
checked unchanged (size and modification time) before each pass. :class:`Mapped` is a
view that applies a function to each sample as it is read (``run.eval.selected``'s
absolute media paths). :func:`take` and :func:`subset` keep a list a list and a lazy
sequence lazy.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from mmrobust.schema import Sample

T = TypeVar("T")

Parse = Callable[[str, int], Sample]
"""``(line text, line number) -> Sample`` (raises as the loader's record parser)."""


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 text file, numbered from 1 as ``str.splitlines``
    numbers the whole text (a byte-order mark at the start dropped), read a line at a time.

    Raises:
        UnicodeDecodeError: a line is not UTF-8.
    """
    n = 0
    with path.open("rb") as fh:
        for i, raw in enumerate(fh):
            text = raw.decode("utf-8-sig" if i == 0 else "utf-8")
            for line in text.splitlines():  # splitlines also splits on \r, \x0b, \u2028 ...
                n += 1
                yield n, line


def _stamp(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


class SampleRows(Sequence[Sample]):
    """The samples at the given line numbers of a file, parsed again on each pass.

    Args:
        path: the file.
        lines: line numbers (1-based, ``numbered_lines``'s) of the samples, ascending.
        parse: ``(line, number) -> Sample``; must succeed for every line in ``lines``.
        stamp: the file's ``(size, mtime_ns)`` when ``lines`` were found (default: now).

    Raises (on reading):
        ValueError: the file changed since it was loaded.
    """

    def __init__(
        self,
        path: Path,
        lines: array[int],
        parse: Parse,
        stamp: tuple[int, int] | None = None,
    ) -> None:
        self.path = path
        self.lines = lines
        self.parse = parse
        self.stamp = stamp or _stamp(path)

    def __len__(self) -> int:
        return len(self.lines)

    def _check(self) -> None:
        if _stamp(self.path) != self.stamp:
            raise ValueError(f"{self.path} changed while it was being evaluated; run again")

    def __iter__(self) -> Iterator[Sample]:
        if not self.lines:
            return
        self._check()
        wanted = iter(self.lines)
        nxt = next(wanted)
        for n, line in numbered_lines(self.path):
            if n == nxt:
                yield self.parse(line, n)
                nxt = next(wanted, -1)
                if nxt < 0:
                    return

    @overload
    def __getitem__(self, i: int) -> Sample: ...

    @overload
    def __getitem__(self, i: slice) -> SampleRows: ...

    def __getitem__(self, i: int | slice) -> Sample | SampleRows:
        if isinstance(i, slice):
            return SampleRows(self.path, self.lines[i], self.parse, self.stamp)
        want = self.lines[i]
        return next(iter(SampleRows(self.path, array(self.lines.typecode, [want]), self.parse)))

    def subset(self, indices: Iterable[int]) -> SampleRows:
        """The samples at ``indices`` (ascending) of this sequence."""
        lines = array(self.lines.typecode, (self.lines[i] for i in indices))
        return SampleRows(self.path, lines, self.parse, self.stamp)


class Mapped(Sequence[T]):
    """``fn`` of each item of a lazy sequence, applied as it is read."""

    def __init__(self, base: Sequence[Any], fn: Callable[[Any], T]) -> None:
        self.base = base
        self.fn = fn

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self) -> Iterator[T]:
        return map(self.fn, self.base)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> Mapped[T]: ...

    def __getitem__(self, i: int | slice) -> T | Mapped[T]:
        if isinstance(i, slice):
            return Mapped(self.base[i], self.fn)
        return self.fn(self.base[i])

    def subset(self, indices: Iterable[int]) -> Mapped[T]:
        """The items at ``indices`` (ascending)."""
        return Mapped(subset(self.base, indices), self.fn)


def is_lazy(items: Sequence[Any]) -> bool:
    """Whether ``items`` is read from its file on each pass (not held in memory)."""
    return isinstance(items, (SampleRows, Mapped))


def take(items: Sequence[Any], fn: Callable[[Any], T]) -> Sequence[T]:
    """``[fn(x) for x in items]``: a list for a list, a lazy :class:`Mapped` view else."""
    return Mapped(items, fn) if is_lazy(items) else [fn(x) for x in items]


def subset(items: Sequence[T], indices: Iterable[int]) -> Sequence[T]:
    """The items at ``indices`` (ascending): a list for a list, a lazy sequence else."""
    if isinstance(items, (SampleRows, Mapped)):
        return items.subset(indices)  # type: ignore[return-value]
    return [items[i] for i in indices]


__all__ = ["Mapped", "Parse", "SampleRows", "is_lazy", "numbered_lines", "subset", "take"]
