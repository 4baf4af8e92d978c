"""The one exception the media layer raises."""

from __future__ import annotations


class MediaError(Exception):
    """A video could not be read, decoded or written.

    Raised for missing files, empty or truncated files, files that are not
    video (text, audio-only), unsupported codecs and out-of-range frame
    indices. The message is always one line and starts with the path, so it
    can go straight into ``errors.jsonl`` or a ``media_error`` status.
    """

    def __init__(self, path: object, reason: str) -> None:
        self.path = str(path)
        self.reason = " ".join(str(reason).split())
        super().__init__(f"{self.path}: {self.reason}")


__all__ = ["MediaError"]
