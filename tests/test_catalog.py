"""``mmrobust list``: what exists, from the registries the code and its errors use (issue 30)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mmrobust.catalog import KINDS, as_text, backends_table, catalog
from mmrobust.cli import app
from mmrobust.datasets import FORMATS
from mmrobust.models import load_model
from mmrobust.models.spec import MODELS
from mmrobust.official import TAMPER_REFERENCES
from mmrobust.prompts import TEMPLATES
from mmrobust.registry import UnknownNameError
from mmrobust.settings_doc import docstring_fields
from mmrobust.tamper.effects import EFFECTS
from mmrobust.tasks.derive import TASKS


def _by_name(kind: str) -> dict[str, dict]:
    return {e["name"]: e for e in catalog(kind)[kind]}


def _option(entry: dict, name: str, key: str = "options") -> dict:
    return next(o for o in entry[key] if o["name"] == name)


def test_each_list_is_its_registry() -> None:
    assert set(_by_name("models")) == set(MODELS.names())
    from mmrobust.perturb.image import IMAGE_EFFECTS

    perturb_only = {*IMAGE_EFFECTS, "reverse", "frame_rate"}
    assert set(_by_name("effects")) == set(EFFECTS.names()) | perturb_only
    assert len(catalog("effects")["effects"]) == len(EFFECTS.names()) + len(perturb_only)
    assert [e["name"] for e in catalog("tasks")["tasks"]] == list(TASKS)
    assert [e["name"] for e in catalog("templates")["templates"]] == list(TEMPLATES)
    refs = _by_name("references")
    assert set(TAMPER_REFERENCES) <= set(refs)
    datasets = _by_name("datasets")
    assert set(FORMATS.names()) <= set(datasets)
    assert datasets["mmr-demo"]["data"] == "mmr-demo"
    assert datasets["MVTamperBench"]["data"] == "hf:MVTamperBench"
    assert datasets["MVTamperBench"]["repo"] == "Srikant86/MVTamperBench"
    assert list(catalog()) == list(KINDS)


def test_the_models_list_names_what_the_unknown_model_error_names() -> None:
    with pytest.raises(UnknownNameError) as err:
        load_model("gtp-4o")
    known = str(err.value).split("Known: ")[1].split(", ")
    assert sorted(known) == sorted(_by_name("models"))


def test_effects_carry_their_parameters() -> None:
    effects = _by_name("effects")
    dropping = effects["dropping"]
    assert dropping["paper"] is True and dropping["official_token"] == "dropping"
    assert dropping["params"] == []
    degrees = _option(effects["rotation"], "degrees", "params")
    assert degrees["choices"] == [90, 180, 270] and degrees["default"] == 180
    assert "letterboxing" in degrees["help"]
    times = _option(effects["repetition"], "times", "params")
    assert (times["type"], times["default"], times["bounds"]) == ("int", 2, ">= 2, <= 10")
    box = _option(effects["masking"], "box", "params")
    assert box["default"] is None and "x0" in box["type"] and "rectangle" in box["help"]
    assert effects["substitution"]["needs_donor"] is True
    assert effects["noise"]["paper"] is False


def test_models_carry_their_model_args_with_types_and_defaults() -> None:
    models = _by_name("models")
    openai = models["openai"]
    assert openai["spec"] == "openai:ARG" and "served model name" in openai["arg"]
    base_url = _option(openai, "base_url")
    assert base_url["type"] == "str" and base_url["default"] == "https://api.openai.com/v1"
    assert "/v1" in base_url["help"]
    concurrency = _option(openai, "concurrency")
    assert (concurrency["type"], concurrency["default"], concurrency["bounds"]) == (
        "int", 4, ">= 1",
    )  # fmt: skip
    assert _option(openai, "jpeg_quality")["bounds"] == ">= 1, <= 100"
    assert _option(openai, "api_key_env")["type"] == "str | None"
    assert _option(openai, "extra_body")["type"] == "JSON object | None"
    assert _option(openai, "prefill")["choices"] == ["continue", "message", "user", "drop"]
    dtype = _option(models["hf"], "dtype")
    assert (
        dtype["choices"] == ["auto", "float32", "float16", "bfloat16"]
        and dtype["default"] == "auto"
    )
    assert _option(models["hf"], "adapter")["type"] == "path | None"
    assert _option(models["forensic"], "prior")["choices"] == ["none", "middle"]
    assert models["blind-overlap"]["options"] == []


@pytest.mark.parametrize("name", ["constant", "random", "forensic"])
def test_the_declared_plain_backend_options_are_what_the_factory_takes(name: str) -> None:
    """Every option listed for a hand-parsed backend is accepted at its default; others are not."""
    arg = {"constant": "constant:A", "random": "random:0", "forensic": "forensic"}[name]
    settings = MODELS.get(name).settings
    assert settings and MODELS.get(name).options is None  # declared by hand in its BackendSpec
    options = {o.name: str(o.default) for o in settings}
    load_model(arg, options)
    for o in settings:
        for choice in o.choices or []:
            load_model(arg, {o.name: str(choice)})
    with pytest.raises(ValueError):
        load_model(arg, {"not_an_option": "1"})


def test_the_docs_backends_table_is_derived_from_the_backend_specs() -> None:
    """docs/models.md shows :func:`backends_table` as it is (one row per registered backend)."""
    from pathlib import Path

    table = backends_table(built_in_only=True)
    built_in = [n for n in MODELS.names() if MODELS.origin(n) == "built-in"]
    assert len(table.splitlines()) == 2 + len(built_in) == 11
    assert "| `openai:<served-name>` |" in table and "| api |" in table
    assert "| `gemini:<model>` | Google's native Gemini API" in table  # register_backend's row
    docs = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text()
    assert table in docs, "docs/models.md's backends table differs from catalog.backends_table()"


def test_every_entry_says_where_it_came_from() -> None:
    for kind in ("models", "effects", "families"):  # the seam tests register theirs in-process
        origins = {e["name"]: e["origin"] for e in catalog(kind)[kind]}
        assert {o for n, o in origins.items() if n not in ("echo", "posterize", "toy-sums")} == {
            "built-in"
        }, kind
    if "echo" in MODELS:
        assert _by_name("models")["echo"]["origin"] == "module tests.test_backend_seam"
    formats = [e for e in catalog("datasets")["datasets"] if e["kind"] == "format"]
    # test_family_seam registers the toy family's `sums` format in-process (its module is the origin)
    assert {e["origin"] for e in formats if e["name"] != "sums"} == {"built-in"}
    assert {e["name"] for e in formats if e["origin"] == "built-in"} >= {"mvtamperbench", "mmr"}
    assert _by_name("models")["forensic"]["media"] == ["video"]
    assert _by_name("models")["hf"]["placement"] == "gpu"
    assert _by_name("families")["mmr"]["card"] == "mmr"
    assert _by_name("families")["generic"]["card"] is None


@pytest.mark.parametrize("name", ["blind-overlap", "blind-embed"])
def test_blind_baselines_refuse_options_not_listed(name: str) -> None:
    with pytest.raises(ValueError):
        load_model(name, {"not_an_option": "1"})


def test_docstring_fields_joins_continuations_and_shared_names() -> None:
    class Doc:
        """Summary.

        Attributes:
            a, b: shared text
                that goes on.
            c: own text.

        Other:
            d: not an attribute.
        """

    assert docstring_fields(Doc) == {
        "a": "shared text that goes on.",
        "b": "shared text that goes on.",
        "c": "own text.",
    }


def test_tasks_templates_and_references_show_their_text() -> None:
    tasks = _by_name("tasks")
    assert tasks["detect"]["default"] is True and tasks["detect"]["benchmark"] == "tamper"
    assert tasks["detect"]["question"].startswith("Does this video exhibit any signs of tampering")
    assert tasks["when"]["benchmark"] == "tamper-when"
    templates = _by_name("templates")
    assert "chain of thought" in templates["cot"]["summary"]
    assert (
        templates["mmr"]["text"]
        == "Answer with the option's letter from the given choices directly."
    )
    refs = _by_name("references")
    assert refs["eb58e9e"]["default"] is True and "paper" in refs["eb58e9e"]["aliases"]
    assert refs["e8e78f0"]["aliases"] == ["head"] and refs["e8e78f0"]["default"] is False
    assert refs["b85b573"]["benchmark"] == "mmr"


def test_list_command_text_and_json() -> None:
    runner = CliRunner()
    text = runner.invoke(app, ["list", "models"])
    assert text.exit_code == 0, text.output
    assert "--model-arg base_url=<str> (default https://api.openai.com/v1)" in text.output
    assert "  openai:ARG " in text.output
    effects = runner.invoke(app, ["list", "effects"])
    assert "-p rotation.degrees=<90|180|270> (default 180)" in effects.output
    data = runner.invoke(app, ["list", "effects", "--json"])
    assert data.exit_code == 0
    parsed = json.loads(data.output)
    assert list(parsed) == ["effects"]
    assert any(e["name"] == "dropping" for e in parsed["effects"])
    everything = runner.invoke(app, ["list", "--json"])
    assert list(json.loads(everything.output)) == list(KINDS)
    assert as_text(catalog()).count(":\n") >= len(KINDS)
    bad = runner.invoke(app, ["list", "modles"])
    assert bad.exit_code == 2 and "Did you mean: models" in bad.output


def test_listing_imports_no_model_library() -> None:
    code = (
        "import sys; from mmrobust.catalog import catalog; catalog(); "
        "print(sorted(m for m in ('torch', 'transformers', 'ray') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_bare_model_name_is_shown_after_the_backends_that_take_one() -> None:
    """``--model gpt-4o`` (no backend) names the spelling that works; a typo keeps its
    "did you mean" and gets no backend hint."""
    with pytest.raises(UnknownNameError) as err:
        load_model("gpt-4o")
    assert str(err.value).startswith(
        "unknown model 'gpt-4o'. A model name goes after its backend: "
        "openai:gpt-4o or hf:gpt-4o (mmrobust list models). Known: "
    )
    known = str(err.value).split("Known: ")[1].split(", ")
    assert sorted(known) == sorted(_by_name("models"))
    with pytest.raises(UnknownNameError) as err:
        load_model("Qwen/Qwen2-VL-2B-Instruct")
    assert "backend: hf:Qwen/Qwen2-VL-2B-Instruct or openai:Qwen" in str(err.value)
    with pytest.raises(UnknownNameError) as err:
        load_model("forensics")
    assert "Did you mean: forensic" in str(err.value)
    assert "goes after its backend" not in str(err.value)


def test_list_help_names_every_kind_it_lists() -> None:
    """``mmrobust list --help`` and the command overview name each kind ``list`` accepts."""
    result = CliRunner().invoke(app, ["list", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    kinds = result.output.split("KIND <str>")[1].split("(default: all)")[0]
    assert [k.strip() for k in kinds.split("|")] == list(KINDS)
    overview = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    line = next(x for x in overview.splitlines() if x.strip().startswith("list "))
    assert all(kind in line for kind in KINDS), line


def test_eval_help_names_every_model_backend_and_the_hub() -> None:
    """``eval --help`` spells each built-in backend (anthropic:, gemini: were missing) and hf: data."""
    result = CliRunner().invoke(app, ["eval", "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    model = next(x for x in result.output.splitlines() if x.strip().startswith("--model "))
    # the backends mmrobust ships (a test module may have registered its own in this process)
    shipped = [n for n, e in _by_name("models").items() if e["origin"] == "built-in"]
    assert len(shipped) == 9 and all(name in model for name in shipped), model
    data = next(x for x in result.output.splitlines() if x.strip().startswith("--data "))
    assert "hf:<owner>/<name>" in data, data


def test_every_command_names_its_arguments_in_capitals() -> None:
    """Usage lines read ``mmrobust rescore [OPTIONS] RUN_DIR`` like every other command's
    (audit, compare and rescore printed ``{data}``, ``{run_a}``, ``{run_dir}``)."""
    import typer

    group = typer.main.get_command(app)
    names = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        for param in command.params:
            if param.param_type_name == "argument":
                names.append((name, param.metavar))
    assert ("rescore", "RUN_DIR") in names and ("compare", "RUN_B") in names
    assert all(m is not None and m == m.upper() for _, m in names), names
