"""Re-run the fault attacks of issue 17 (and issue 18's server-limit / empty-reply cases)
against an mmrobust source tree; print one line per case and the pass count.

Each case drives the real ``mmrobust`` command in a subprocess (``python -m mmrobust.cli``)
with ``PYTHONPATH`` set to ``--src`` (compare a branch with ``main``: export ``main`` with
``git archive main | tar -x -C /tmp/main`` and pass ``--src /tmp/main/src``), against
loopback fault servers run by this script (``tests/fake_openai_server.py``). A case passes
when the run neither crashes (traceback), hangs (killed at its time limit), leaks a secret,
nor silently gives a wrong result. Linux; the full-disk case mounts a 256 KiB tmpfs when run
as root and falls back to ``RLIMIT_FSIZE`` otherwise; the unreadable-folder case runs the
build as ``nobody`` when root (root reads any folder).

Usage::

    python benchmarks/fault_attacks.py --src src
    python benchmarks/fault_attacks.py --src /tmp/main/src
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fake_openai_server import FakeOpenAIServer, RecordedRequest, Reply  # noqa: E402

KEY = "sk-proj-abcdefghijklmnopqrstuvw"
Result = tuple[bool, str]


class Env:
    """Where the cases run: the source tree under test and a scratch folder."""

    def __init__(self, src: Path, work: Path) -> None:
        self.src = src.resolve()
        self.work = work

    def mm(
        self,
        *args: str,
        timeout: float = 120,
        env: dict[str, str] | None = None,
        preexec: Callable[[], None] | None = None,
        prefix: tuple[str, ...] = (),
    ) -> subprocess.CompletedProcess[str]:
        """``mmrobust ARGS`` with the tree under test; ``returncode`` -9 when killed at ``timeout``."""
        full = {**os.environ, "PYTHONPATH": f"{self.src}:{REPO}", **(env or {})}
        cmd = [*prefix, sys.executable, "-m", "mmrobust.cli", *args]
        try:
            return subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, env=full, preexec_fn=preexec
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
            return subprocess.CompletedProcess(cmd, -9, out, err)

    def folder(self, name: str) -> Path:
        path = self.work / name
        path.mkdir(parents=True, exist_ok=True)
        return path


def _jsonl(path: Path, ids: list[str], **extra: object) -> Path:
    rows = [
        {"id": i, "question": f"Is {i} tampered?", "options": ["Yes", "No"], "answer": "No"} | extra
        for i in ids
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _rows(run: Path) -> list[dict[str, object]]:
    db = run / "results.sqlite"
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM results")]
    finally:
        con.close()


def _crashed(proc: subprocess.CompletedProcess[str]) -> bool:
    return "Traceback" in proc.stderr or proc.returncode == -9


def _openai(server: FakeOpenAIServer, data: Path, out: Path, *args: str) -> list[str]:
    return [
        "eval", "--data", str(data), "--model", "openai:test", "--model-arg",
        f"base_url={server.base_url}", "--model-arg", "backoff_initial=0.01", "--model-arg",
        "backoff_max=0.02", "--out", str(out), "--bootstrap", "0", "-q",
        "--cache-dir", str(out.parent / "cache"), *args,
    ]  # fmt: skip


# -- the cases ---------------------------------------------------------------------------------


def rejected_samples(env: Env) -> Result:
    """42 samples, 12 always refused with a 400: all asked in one run, none re-asked."""
    data = _jsonl(
        env.folder("reject") / "d.jsonl",
        [f"bad{i:02d}" for i in range(12)] + [f"good{i:02d}" for i in range(30)],
    )
    out = env.work / "reject" / "run"

    def respond(req: RecordedRequest) -> Reply:
        bad = "bad" in req.text
        return Reply.error(400, message="too many image tokens") if bad else Reply.ok("B")

    with FakeOpenAIServer(responder=respond) as srv:
        counts = []
        for _ in range(3):
            env.mm(*_openai(srv, data, out, "--model-arg", "concurrency=1"))
            counts.append(len(_rows(out)))
        asked = len(srv.chat_requests)
    good = sum(1 for r in _rows(out) if r["status"] == "ok")
    return good == 30 and counts[
        0
    ] == 42 and asked == 42, f"rows per run {counts}, {good}/30 good answered, {asked} requests"


def trickle(env: Env) -> Result:
    """A server sending one byte every 0.5 s with timeout=3: a timeout row, not a hang."""
    data = _jsonl(env.folder("trickle") / "d.jsonl", ["s0"])
    with FakeOpenAIServer(responder=lambda _r: Reply.trickle(every_s=0.5)) as srv:
        t0 = time.monotonic()
        proc = env.mm(
            *_openai(srv, data, env.work / "trickle" / "run", "--model-arg", "timeout=3",
                     "--model-arg", "max_retries=0"),
            timeout=60,
        )  # fmt: skip
        took = time.monotonic() - t0
    rows = _rows(env.work / "trickle" / "run")
    status = rows[0]["status"] if rows else None
    return (
        proc.returncode == 0 and status == "timeout",
        f"{took:.0f} s, status {status}, exit {proc.returncode}",
    )


def full_disk(env: Env) -> Result:
    """--out on a full filesystem: one-line stop, non-zero exit, store intact."""
    data = _jsonl(env.folder("disk") / "d.jsonl", [f"s{i}-" + "x" * 200 for i in range(3000)])
    mnt = env.folder("disk/mnt")
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        == 0
    )

    def limit() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (128 * 1024, 128 * 1024))

    try:
        out = mnt / "run"
        proc = env.mm(
            "eval", "--data", str(data), "--model", "constant:A", "--out", str(out), "-q",
            "--bootstrap", "0", preexec=None if mounted else limit,
        )  # fmt: skip
        kept = len(_rows(out))
        con = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
        intact = con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], capture_output=True)
    lines = proc.stderr.strip().splitlines()
    ok = proc.returncode not in (0, -9) and not _crashed(proc) and len(lines) == 1 and intact
    how = "tmpfs 256 KiB" if mounted else "RLIMIT_FSIZE"
    return (
        ok,
        f"{how}: exit {proc.returncode}, {len(lines)} stderr line(s), {kept} rows kept, "
        f"integrity {'ok' if intact else 'BAD'}",
    )


def two_processes(env: Env) -> Result:
    """Two copies of one command started at once on one folder (20 ms per answer), and two
    models started at once on one folder; 2 rounds each."""
    data = _jsonl(env.folder("twice") / "d.jsonl", [f"s{i}" for i in range(60)])
    full = {**os.environ, "PYTHONPATH": f"{env.src}:{REPO}"}
    mixed = paid_twice = 0
    slow = Reply(body=Reply.ok("A").body, delay_s=0.02)
    with FakeOpenAIServer(responder=lambda _r: slow) as srv:
        for round_, models in enumerate(
            2 * [("openai:a", "openai:a")] + 2 * [("openai:a", "openai:b")]
        ):
            out = env.work / "twice" / f"run{round_}"
            before = len(srv.chat_requests)
            procs = []
            for model in models:
                args = _openai(srv, data, out)
                args[args.index("openai:test")] = model
                cmd = [sys.executable, "-m", "mmrobust.cli", *args]
                procs.append(subprocess.Popen(cmd, env=full, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True))  # fmt: skip
            codes = [p.wait(120) for p in procs]
            for p in procs:
                p.communicate()
            paid_twice += len(srv.chat_requests) - before - 60
            if len({r["model_fp"] for r in _rows(out)}) > 1 or codes == [0, 0]:
                mixed += 1
    return mixed == 0 and paid_twice <= 0, (
        f"{mixed}/4 rounds with both runs exiting 0 or two models in one store; "
        f"{max(paid_twice, 0)} samples asked twice"
    )


def _png(path: Path, width: int, height: int) -> None:
    rows = zlib.compressobj(1)
    row = b"\x00" + b"\x80" * (3 * width)
    idat = b"".join(rows.compress(row) for _ in range(height)) + rows.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def huge_png(env: Env) -> Result:
    """A 12000x12000 PNG renamed .mp4, eval --frames 8 under a 3 GiB address-space limit."""
    folder = env.folder("png")
    _png(folder / "huge.mp4", 12000, 12000)
    data = _jsonl(folder / "d.jsonl", ["huge"], video="huge.mp4")

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    out = folder / "run"
    with FakeOpenAIServer() as srv:  # a model that is sent the frames
        proc = env.mm(*_openai(srv, data, out), preexec=limit, timeout=300)
    cache = sum(f.stat().st_size for f in (folder / "cache").rglob("*") if f.is_file())
    rows = _rows(out)
    status = rows[0]["status"] if rows else None
    ok = proc.returncode == 0 and not _crashed(proc) and status in ("ok", "media_error")
    return ok, f"exit {proc.returncode}, status {status}, cache {cache / 1e6:.0f} MB"


def nested_json(env: Env) -> Result:
    """Deeply nested JSON in each dataset format: defects or one-line errors, no traceback."""
    folder = env.folder("nested")
    deep = "[" * 100_000 + "]" * 100_000
    good = json.dumps({"id": "g", "question": "q", "options": ["Yes", "No"], "answer": "Yes"})
    (folder / "lines.jsonl").write_text(good + "\n" + deep + "\n")
    (folder / "array.json").write_text("[" + good + "," + deep + "]")
    (folder / "set").mkdir(exist_ok=True)
    (folder / "set" / "manifest.jsonl").write_text(deep + "\n")
    (folder / "mvtb" / "json").mkdir(parents=True, exist_ok=True)
    (folder / "mvtb" / "json" / "t.json").write_text(deep)
    (folder / "MMR-benchmark.json").write_text("[" + deep + "]")
    tracebacks = []
    for name, fmt in (("lines.jsonl", "jsonl"), ("array.json", "jsonl"), ("set", "manifest"),
                      ("mvtb", "mvtamperbench"), ("MMR-benchmark.json", "mmr")):  # fmt: skip
        proc = env.mm(
            "eval", "--data", str(folder / name), "--format", fmt, "--model", "constant:A",
            "--out", str(folder / f"run-{fmt}-{name}"), "-q", "--bootstrap", "0", "--text-only",
        )  # fmt: skip
        if _crashed(proc):
            tracebacks.append(name)
    return not tracebacks, f"tracebacks in {tracebacks or 'none'} of 5 formats"


def mmr_five_options(env: Env) -> Result:
    """MMR questions with an E option / a repeated D: defects, not scored as 4-option."""
    folder = env.folder("mmr5")
    recs = []
    for pid, q in (("attribute/shape/00", "Shape?\nA. a\nB. b\nC. c\nD. d"),
                   ("attribute/shape/01", "Shape?\nA. a\nB. b\nC. c\nD. d\nE. e"),
                   ("attribute/shape/02", "Shape?\nA. a\nB. b\nC. c\nD. d\nD. e")):  # fmt: skip
        recs += [
            {"id": pid, "image": "x.jpg", "question": q, "ground_truth": "A", "question_type": t}
            for t in ("POS", "NEG")
        ]
    (folder / "MMR-benchmark.json").write_text(json.dumps(recs))
    out = folder / "run"
    env.mm("eval", "--data", str(folder / "MMR-benchmark.json"), "--model", "constant:A",
           "--out", str(out), "-q", "--bootstrap", "0", "--text-only")  # fmt: skip
    metrics = (
        json.loads((out / "metrics.json").read_text()) if (out / "metrics.json").exists() else {}
    )
    flagged = sum("4-option" in d for d in metrics.get("defects", []))
    scored = sum(1 for r in _rows(out) if r["status"] == "ok")
    return flagged == 4 and scored == 2, f"{flagged}/4 defects, {scored} rows scored (2 valid)"


def bad_donor(env: Env, clips: dict[str, Path]) -> Result:
    """A donor corrupt in its middle: good sources keep their substitution clip."""
    folder = env.folder("donor")
    data = bytearray(clips["bikes"].read_bytes())
    data[len(data) // 10 : len(data) // 10 + 20_000] = bytes(20_000)
    (folder / "bad.mp4").write_bytes(bytes(data))
    built = 0
    seeds = 0
    for seed in range(6):
        out = folder / f"out{seed}"
        env.mm("tamper", str(clips["carphone_pristine"]), str(clips["carphone_distorted"]),
               "--out", str(out), "--effects", "substitution", "--donor", str(folder / "bad.mp4"),
               "--donor", str(clips["bikes"]), "--seed", str(seed), "-q",
               "--preset", "ultrafast")  # fmt: skip
        lines = (out / "manifest.jsonl").read_text().splitlines()
        built += sum(json.loads(x)["tamper_type"] == "substitution" for x in lines)
        seeds += 1
    return built == 2 * seeds, f"{built}/{2 * seeds} substitution clips over {seeds} seeds"


def unreadable_folder(env: Env, clips: dict[str, Path]) -> Result:
    """An unreadable sub-folder of a source tree is reported in errors.jsonl."""
    folder = env.folder("perm")
    for sub in ("ok", "locked"):
        (folder / "tree" / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(clips["carphone_pristine"], folder / "tree" / sub / f"{sub}.mp4")
    shutil.copy(clips["carphone_distorted"], folder / "tree" / "ok" / "other.mp4")
    os.chmod(folder / "tree" / "locked", 0)
    # root reads any folder: drop the capabilities that let it (util-linux setpriv)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0 and shutil.which("setpriv"):
        prefix = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--")
    out = folder / "out"
    env.mm("tamper", str(folder / "tree"), "--out", str(out), "--effects", "masking", "-q",
           "--preset", "ultrafast", prefix=prefix)  # fmt: skip
    os.chmod(folder / "tree" / "locked", 0o755)
    errors = (out / "errors.jsonl").read_text() if (out / "errors.jsonl").exists() else ""
    return "locked" in errors, "reported in errors.jsonl" if "locked" in errors else "silent"


def path_spelling(env: Env) -> Result:
    """Resume with the same dataset under another spelling."""
    folder = env.folder("spell")
    _jsonl(folder / "d.jsonl", ["a", "b"])
    (folder / "sub").mkdir(exist_ok=True)
    first = env.mm("eval", "--data", str(folder / "d.jsonl"), "--model", "constant:A", "--out",
                   str(folder / "run"), "-q", "--bootstrap", "0")  # fmt: skip
    cwd = os.getcwd()
    os.chdir(folder / "sub")
    try:
        again = env.mm("eval", "--data", "../sub/../d.jsonl", "--model", "constant:A", "--out",
                       str(folder / "run"), "-q", "--bootstrap", "0")  # fmt: skip
    finally:
        os.chdir(cwd)
    ok = first.returncode == 0 and again.returncode == 0 and "2 resumed" in again.stdout
    return ok, f"exit {again.returncode}: {(again.stdout + again.stderr).strip()[-90:]!r}"


def killed_jobs(env: Env, clips: dict[str, Path]) -> Result:
    """SIGKILL of `tamper --jobs 2`: its workers must end."""
    out = env.folder("jobs") / "out"
    full = {**os.environ, "PYTHONPATH": f"{env.src}:{REPO}"}
    parent = subprocess.Popen(
        [sys.executable, "-m", "mmrobust.cli", "tamper", *map(str, clips.values()), "--out",
         str(out), "--jobs", "2", "-q", "--preset", "ultrafast"],
        env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline and parent.poll() is None:
        workers = {
            int(p.name) for p in Path("/proc").glob("[0-9]*")
            if _ppid(int(p.name)) == parent.pid and b"spawn_main" in _cmdline(int(p.name))
        }  # fmt: skip
        time.sleep(0.1)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    time.sleep(5)
    alive = [w for w in workers if _state(w) not in (None, "Z")]
    for w in alive:
        os.kill(w, signal.SIGKILL)
    return not alive and len(workers) == 2, f"{len(alive)}/{len(workers)} workers alive 5 s later"


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _leaks(folders: list[Path], texts: list[str], secrets: list[str]) -> int:
    n = sum(s in t for s in secrets for t in texts)
    for folder in folders:
        for f in folder.rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                n += sum(s.encode() in data for s in secrets)
    return n


def key_echo(env: Env) -> Result:
    """A 401 echoing the key near the 200-character cut, and a 200 answer echoing it."""
    folder = env.folder("echo")
    data = _jsonl(folder / "d.jsonl", ["e401", "e200"])

    def respond(req: RecordedRequest) -> Reply:
        auth = req.headers.get("authorization", "")
        if "e401" in req.text:
            return Reply.error(401, message="x" * 143 + f" bad header {auth}")
        return Reply.ok(f"B ({auth})")

    out = folder / "run"
    with FakeOpenAIServer(responder=respond) as srv:
        proc = env.mm(
            *_openai(
                srv,
                data,
                out,
                "--model-arg",
                "api_key_env=ATTACK_KEY",
                "--model-arg",
                "max_retries=0",
            ),
            env={"ATTACK_KEY": KEY},
        )
    rep = env.mm("report", str(out), "--out", str(folder / "rep"))
    n = _leaks(
        [out, folder / "rep"], [proc.stdout + proc.stderr, rep.stdout], [KEY[:15], KEY[-12:]]
    )
    return n == 0, f"{n} places hold a part of the key"


def url_password(env: Env) -> Result:
    """A password in base_url."""
    folder = env.folder("urlpw")
    data = _jsonl(folder / "d.jsonl", ["s0"])
    out = folder / "run"
    with FakeOpenAIServer() as srv:
        base = srv.base_url.replace("http://", "http://user:PASSWORD123@")
        proc = env.mm("eval", "--data", str(data), "--model", "openai:test", "--model-arg",
                      f"base_url={base}", "--out", str(out), "-q", "--bootstrap", "0")  # fmt: skip
    n = _leaks([out], [proc.stdout + proc.stderr], ["PASSWORD123"])
    return n == 0, f"{n} files/streams hold the password"


def dead_judge(env: Env) -> Result:
    """--judge at a dead server: reason stored, the run stops like for a dead model."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = env.folder("judge")
    data = _jsonl(folder / "d.jsonl", [f"s{i}" for i in range(20)])
    out = folder / "run"
    proc = env.mm("eval", "--data", str(data), "--model", "constant:perhaps", "--out", str(out),
                  "-q", "--bootstrap", "0", "--judge", "openai:j", "--judge-arg",
                  f"base_url=http://127.0.0.1:{port}/v1", "--judge-arg", "max_retries=0")  # fmt: skip
    rows = _rows(out)
    reasons = sum(bool(r["error"]) for r in rows)
    ok = proc.returncode == 3 and reasons == len(rows) and len(rows) < 20
    return ok, f"exit {proc.returncode}, {len(rows)} rows, {reasons} with a reason"


def empty_greedy(env: Env) -> Result:
    """Empty replies at temperature 0: final at once, not 5 retries."""
    folder = env.folder("empty")
    data = _jsonl(folder / "d.jsonl", ["s0"])
    with FakeOpenAIServer(responder=lambda _r: Reply.empty()) as srv:
        t0 = time.monotonic()
        env.mm(*_openai(srv, data, folder / "run", "--model-arg", "backoff_initial=1",
                        "--model-arg", "backoff_max=8"))  # fmt: skip
        took, asked = time.monotonic() - t0, len(srv.chat_requests)
    rows = _rows(folder / "run")
    status = rows[0]["status"] if rows else None
    return asked == 1 and status == "empty_reply", f"{asked} requests, {took:.0f} s, {status}"


def server_limit(env: Env, clips: dict[str, Path]) -> Result:
    """--frames 16 against a server taking 8 images: stop at the first refusal with the fix."""
    folder = env.folder("limit")
    data = _jsonl(folder / "d.jsonl", [f"s{i}" for i in range(20)],
                  video=str(clips["carphone_distorted"]))  # fmt: skip

    def respond(req: RecordedRequest) -> Reply:
        if len(req.image_urls) > 8:
            return Reply.error(400, message="At most 8 image(s) may be provided in one prompt.")
        return Reply.ok("B")

    with FakeOpenAIServer(responder=respond) as srv:
        proc = env.mm(*_openai(srv, data, folder / "run", "--frames", "16", "--model-arg",
                               "concurrency=1"))  # fmt: skip
        asked = len(srv.chat_requests)
    hint = "--frames 8" in proc.stderr
    return (
        asked == 1 and hint and proc.returncode == 3,
        f"{asked} refused requests, exit {proc.returncode}, fix {'printed' if hint else 'missing'}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=REPO / "src", help="mmrobust src/ to attack")
    parser.add_argument("--only", nargs="*", default=[], help="run cases whose name starts so")
    args = parser.parse_args()
    sys.path.insert(0, str(args.src.resolve()))
    from mmrobust.media import sample_clips

    clips = sample_clips()
    cases: list[tuple[str, Callable[[Env], Result]]] = [
        ("1 rejected samples block the run", rejected_samples),
        ("2 trickling server hangs eval", trickle),
        ("4 full disk under --out", full_disk),
        ("5 two processes on one --out", two_processes),
        ("6 12000x12000 PNG renamed .mp4", huge_png),
        ("7 deeply nested JSON", nested_json),
        ("8 MMR fifth option / repeated D", mmr_five_options),
        ("9 donor corrupt in its middle", lambda e: bad_donor(e, clips)),
        ("10 unreadable sub-folder", lambda e: unreadable_folder(e, clips)),
        ("11 dataset path under another spelling", path_spelling),
        ("12 killed tamper --jobs 2", lambda e: killed_jobs(e, clips)),
        ("13 key echoed near the cut / in an answer", key_echo),
        ("14 password in base_url", url_password),
        ("judge at a dead server", dead_judge),
        ("18 empty reply at temperature 0", empty_greedy),
        ("18 server image limit", lambda e: server_limit(e, clips)),
    ]
    cases = [c for c in cases if not args.only or any(c[0].startswith(o) for o in args.only)]
    passed = 0
    with tempfile.TemporaryDirectory(prefix="mmrobust-attacks-") as tmp:
        os.chmod(tmp, 0o777)
        env = Env(args.src, Path(tmp))
        for name, case in cases:
            t0 = time.monotonic()
            try:
                ok, detail = case(env)
            except Exception as exc:  # the harness itself failed on this case
                ok, detail = False, f"harness error: {type(exc).__name__}: {exc}"
            passed += ok
            print(
                f"{'PASS' if ok else 'FAIL'}  {name:45s} {detail} ({time.monotonic() - t0:.0f} s)"
            )
    print(f"{passed}/{len(cases)} cases pass against {args.src}")


if __name__ == "__main__":
    main()
