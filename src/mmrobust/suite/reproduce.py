"""The report's "Reproduce" panel of ``mmrobust run``: the suite file that made the report.

:func:`reproduce_section` writes ``REPORT/suite.yaml`` (the effective suite file, credentials
scrubbed: :meth:`mmrobust.suite.file.SuiteFile.scrubbed`) and returns the panel showing it
with the command that runs it again, so a published report says how to reproduce it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SUITE_YAML = "suite.yaml"
"""The suite file inside the report folder."""

_PANEL = """
<p class="note">This report was made by <code>mmrobust run --config {{ name }}</code> with the
file below (<a href="{{ name }}">{{ name }}</a>; credentials are never written in it: API keys
come from the environment variable <code>api_key_env</code> names). Re-running it resumes each
run folder and asks only what is missing.</p>
<pre>{{ text }}</pre>
"""


def reproduce_section(file: dict[str, Any], report_dir: str | Path) -> Any:
    """Write ``report_dir/suite.yaml`` from ``file`` (a scrubbed ``SuiteFile.record``) and
    return the :class:`mmrobust.report.html.Section` showing it.

    Raises:
        OSError: the file cannot be written.
        SuiteFileError: ``file`` is not a suite file.
    """
    from mmrobust.atomicfile import atomic_write
    from mmrobust.report.html import Section, render_section
    from mmrobust.suite.file import SuiteFile, dump_suite_file

    text = dump_suite_file(SuiteFile.model_validate(file))
    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / SUITE_YAML) as f:
        f.write(text)
    return Section("reproduce", "Reproduce", render_section(_PANEL, name=SUITE_YAML, text=text))


__all__ = ["SUITE_YAML", "reproduce_section"]
