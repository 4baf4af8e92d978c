"""Build a tiny, randomly initialised Idefics3 (SmolVLM-style) checkpoint offline.

A byte-level BPE tokenizer is trained here with ``tokenizers`` on a few
sentences (plus the special tokens the Idefics3 processor needs), the model
has one text layer of width 64 (two heads of 32) and one vision layer of
width 32, and images are 32x32 with 8-pixel patches (4 image tokens after
pixel shuffle). The folder is about 300 KB; building it takes a second or two on CPU. The output text is noise:
tests use it to check the plumbing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}:"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)

SENTENCES = [
    "Does this video exhibit any signs of tampering, such as corruption, blackouts, "
    "rotated frames, repeated frames, or swapped frames?",
    "A. Yes",
    "B. No",
    "Answer with the option's letter from the given choices directly.",
    "User: Assistant: System:",
    "What color is the car in the image?",
]


IDEFICS3_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<end_of_utterance>",
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    *(f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)),
]
"""Special tokens of the Idefics3 / SmolVLM tokenizer (SmolVLM2 adds ``<video>``)."""


# a tiny SigLIP vision tower: 32-px images of 8-px patches (also tests/hf_families.py)
TINY_SIGLIP = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "image_size": 32,
    "patch_size": 8,
}


def train_tokenizer(
    special: list[str],
    *,
    bos: str | None,
    eos: str,
    pad: str,
    prepend_bos: bool = False,
    extra_special_tokens: dict[str, str] | None = None,
    added_tokens: Sequence[str] = (),
    vocab_size: int = 400,
) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``SENTENCES``.

    ``special`` tokens come first (ids 0, 1, ...); ``prepend_bos`` adds ``bos``
    to every encoded text, as Gemma's and Llama's tokenizers do;
    ``extra_special_tokens`` become tokenizer attributes (``tokenizer.image_token``);
    ``added_tokens`` are whole (non-special) tokens, e.g. Gemma's ``"\\n\\n"``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(SENTENCES * 10, trainer)
    if prepend_bos and bos is not None:
        bos_id = bpe.token_to_id(bos)
        bpe.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, bos_id)]
        )
    kwargs: dict[str, Any] = {}
    if extra_special_tokens:
        kwargs["extra_special_tokens"] = extra_special_tokens
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=bos, eos_token=eos, pad_token=pad, **kwargs
    )
    if added_tokens:
        tokenizer.add_tokens(list(added_tokens))
    return tokenizer


def build_tiny_idefics3(out: Path, *, seed: int = 0) -> Path:
    """Write a tiny Idefics3 model + processor to ``out`` and return it."""
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3Processor,
    )
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    tokenizer = train_tokenizer(
        IDEFICS3_SPECIAL, bos="<|im_start|>", eos="<end_of_utterance>", pad="<|endoftext|>"
    )
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": 32}, max_image_size={"longest_edge": 32}, do_image_splitting=False
    )
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        image_seq_len=4,
        chat_template=CHAT_TEMPLATE,
    )
    vocab = len(tokenizer)
    config = Idefics3Config(
        text_config={
            "model_type": "llama",
            "vocab_size": vocab,
            "hidden_size": 64,  # head_dim 32: vLLM's CPU attention has no head_dim 16
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 2048,
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "tie_word_embeddings": False,
        },
        vision_config=dict(TINY_SIGLIP),
        scale_factor=2,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


__all__ = [
    "CHAT_TEMPLATE",
    "IDEFICS3_SPECIAL",
    "SENTENCES",
    "build_tiny_idefics3",
    "train_tokenizer",
]
