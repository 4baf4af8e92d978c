"""Fine-tuning throughput: training tokens per second and peak memory of ``mmrobust finetune``.

Builds the tests' tiny random checkpoint of a real family (Idefics3 or
Qwen2-VL, widened to ``--hidden``/``--layers``), generates the 8 paired
questions with ``mmrobust mmr-data`` against the local fake server, and runs
``run_finetune`` (LoRA, TRL SFTTrainer) for ``--steps`` optimizer steps on
the generated ``mmr.json`` (and ``llava.json`` with ``--open``). Prints
figures; asserts nothing.

    python benchmarks/finetune_throughput.py [--family idefics3|qwen2vl] [--steps 30]
        [--batch 8] [--threads 1] [--device cpu|auto] [--hidden 64] [--layers 2]

Figures: input tokens/s (non-padding tokens the model reads, image tokens
included; the trainer's ``num_input_tokens_seen`` over its train runtime),
answer tokens/s (tokens in the loss), optimizer steps/s, peak resident memory
of the process (MiB) and, on a GPU, peak allocated GPU memory.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=("idefics3", "qwen2vl"), default="idefics3")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--device", choices=("cpu", "auto"), default="cpu")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--open", action="store_true", help="also train on llava.json (open answers)")
    a = ap.parse_args()

    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    from tests.finetune_data import generate_pairs, widen_text_model

    from mmrobust.finetune import FinetuneConfig, run_finetune

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = generate_pairs(root / "data")
        folder = root / a.family
        if a.family == "idefics3":
            from tests.hf_tiny import build_tiny_idefics3

            widen_text_model(build_tiny_idefics3(folder), hidden=a.hidden, layers=a.layers)
        else:
            from tests.hf_tiny_qwen2vl import build_tiny_qwen2vl

            build_tiny_qwen2vl(
                folder, hidden=a.hidden, layers=a.layers, lm_head_std=0.5, initializer_range=0.2
            )
        files = [data / "mmr.json"] + ([data / "llava.json"] if a.open else [])
        config = FinetuneConfig(
            model=str(folder), data=files, out=root / "ft", global_batch=a.batch,
            per_device_batch=a.batch, max_steps=a.steps, learning_rate=5e-3, lora_r=64,
            lora_alpha=128, device=a.device, save_steps=10**6,
        )  # fmt: skip
        started = time.perf_counter()
        result = run_finetune(config, progress=False, log=lambda _m: None)
        wall = time.perf_counter() - started
        r = result.card["result"]
        runtime = float(r["train_runtime_s"])
        answer_tokens = r["answer_tokens_per_epoch"] * r["epochs"]
        params = f"{r['trainable_parameters']:,} trainable of {r['total_parameters']:,}"
        print(f"{a.family} (hidden {a.hidden}, {a.layers} layers; LoRA r=64: {params}), "
              f"{result.samples} samples, batch {a.batch}, {result.steps} steps, device {result.card['device']}, "
              f"torch threads {torch.get_num_threads()}")  # fmt: skip
        print(f"train runtime {runtime:.2f} s: {result.steps / runtime:.2f} steps/s, "
              f"{r['input_tokens_per_s']:,.0f} input tokens/s ({r['input_tokens_seen']:,} tokens), "
              f"{answer_tokens / runtime:,.0f} answer tokens/s")  # fmt: skip
        print(f"loss {result.first_loss:.3f} -> {result.final_loss:.4f}; peak RSS {r['peak_rss_mib']:,.0f} MiB"
              + (f"; peak GPU {r['peak_gpu_memory_mib']:,.0f} MiB" if r["peak_gpu_memory_mib"] else "")
              + f"; wall {wall:.1f} s (load, data checks, train, save)")  # fmt: skip
        shutil.rmtree(root / "ft", ignore_errors=True)


if __name__ == "__main__":
    main()
