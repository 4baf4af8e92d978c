"""Is W&B usable? Checked before a run starts, without the network or importing ``wandb``.

``--log-to wandb`` (``eval``, ``run``, ``report``) and ``finetune --report-to wandb`` ask
:func:`wandb_problem` first, so a missing package or login is one line before any work,
not a traceback after it.
"""

from __future__ import annotations

from pathlib import Path

INSTALL_HINT = "pip install 'mmrobust[wandb]'"
"""The one line a missing ``wandb`` package gives."""

_OFF_MODES = {"offline", "dryrun", "disabled"}
_TRUE = {"1", "true", "yes", "on"}


def _wandb_host() -> str:
    """Host name W&B authenticates against (``WANDB_BASE_URL``, default ``api.wandb.ai``)."""
    import os
    from urllib.parse import urlsplit

    url = os.environ.get("WANDB_BASE_URL", "").strip() or "https://api.wandb.ai"
    return urlsplit(url if "//" in url else f"https://{url}").hostname or "api.wandb.ai"


def _netrc_has(host: str) -> bool:
    """Whether the netrc file W&B reads (``NETRC``, else ``~/.netrc``, else ``~/_netrc``)
    holds a password for ``host``."""
    import netrc
    import os

    env = os.environ.get("NETRC")
    candidates = [Path(env).expanduser()] if env else [Path("~/.netrc"), Path("~/_netrc")]
    for path in (p.expanduser() for p in candidates):
        if not path.is_file():
            continue
        try:
            entry = netrc.netrc(str(path)).authenticators(host)
        except (OSError, netrc.NetrcParseError):
            return False
        return bool(entry and entry[2])
    return False


def _settings_key() -> bool:
    """Whether W&B's settings file (``WANDB_CONFIG_DIR``/settings, else
    ``~/.config/wandb/settings``) holds an ``api_key``."""
    import configparser
    import os

    folder = os.environ.get("WANDB_CONFIG_DIR") or str(Path("~/.config/wandb").expanduser())
    parser = configparser.ConfigParser()
    try:
        parser.read(Path(folder) / "settings", encoding="utf-8")
    except (OSError, configparser.Error):
        return False
    return any(parser.get(s, "api_key", fallback="").strip() for s in parser.sections())


def wandb_problem() -> str | None:
    """Why logging to W&B would fail, in one line, or ``None`` (nothing is imported).

    Checked where the W&B client looks for credentials, without the network: the
    ``wandb`` package; ``WANDB_MODE`` ``offline``/``disabled`` (or ``WANDB_DISABLED``)
    needs no login; else ``WANDB_API_KEY``, ``WANDB_IDENTITY_TOKEN_FILE``, the netrc entry
    for the W&B host (what ``wandb login`` writes), or an ``api_key`` in W&B's settings file.
    A key that is present but wrong is reported by W&B when the run is logged.
    """
    import importlib.util
    import os

    if importlib.util.find_spec("wandb") is None:
        return f"--log-to wandb needs the wandb package: {INSTALL_HINT}"
    mode = os.environ.get("WANDB_MODE", "").strip().lower()
    if mode in _OFF_MODES or os.environ.get("WANDB_DISABLED", "").strip().lower() in _TRUE:
        return None
    if os.environ.get("WANDB_API_KEY", "").strip() or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return None
    host = _wandb_host()
    if _netrc_has(host) or _settings_key():
        return None
    return (
        f"--log-to wandb: not logged in to W&B ({host}: no WANDB_API_KEY, no netrc entry): "
        "run `wandb login` first, or set WANDB_MODE=offline to log locally for a later `wandb sync`"
    )


__all__ = ["INSTALL_HINT", "wandb_problem"]
