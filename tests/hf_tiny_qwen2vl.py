"""Build a tiny, randomly initialised Qwen2-VL checkpoint offline.

Real classes throughout: ``Qwen2VLConfig`` / ``Qwen2VLForConditionalGeneration``,
``Qwen2VLProcessor`` with the PIL image processor and the video processor (which
the processor requires and which needs ``torchvision`` in transformers 5), a ``Qwen2TokenizerFast`` over a byte-level BPE
trained here on a few sentences with Qwen's special tokens, and the chat
template of ``Qwen/Qwen2-VL-2B-Instruct`` (``chat_template.json`` of the hub
repository; the default system message included). The model has one text and
one vision layer of width 32; images are resized to 32x32 and cut into 8-pixel
patches, 2x2 merged: 4 ``<|image_pad|>`` tokens per image. About 300 KB,
built in a second or two on CPU.
"""

from __future__ import annotations

from pathlib import Path

# chat_template.json of Qwen/Qwen2-VL-2B-Instruct (verbatim)
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
    "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
    "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

SENTENCES = [
    "You are a helpful assistant.",
    "system user assistant",
    "What colour is the square? Answer with the option's letter from the given choices directly.",
    "A. Red. B. Blue. C. Green. D. Gray.",
]

SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]


def build_tiny_qwen2vl(
    out: Path,
    *,
    seed: int = 0,
    hidden: int = 32,
    layers: int = 1,
    lm_head_std: float | None = None,
    initializer_range: float = 0.02,
) -> Path:
    """Write a tiny Qwen2-VL model + processor to ``out`` and return it.

    Args:
        out: folder (created).
        seed: torch seed of the random weights.
        hidden, layers: width and depth of the language model (head size stays 16).
        lm_head_std: re-draw the output layer with this standard deviation (the
            default 0.02 caps the logits near zero, so a frozen output layer, as
            under LoRA, could never express a confident answer).
        initializer_range: standard deviation of the other random weights.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        Qwen2TokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLProcessor,
    )
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(SENTENCES * 10, trainer)
    tokenizer = Qwen2TokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
    )
    pixels = 32 * 32
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=pixels,
        max_pixels=pixels,
        patch_size=8,
        temporal_patch_size=2,
        merge_size=2,
    )
    # Qwen2VLProcessor requires a video processor; in transformers 5 it needs torchvision
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    video_processor = Qwen2VLVideoProcessor(
        min_pixels=pixels, max_pixels=pixels, patch_size=8, temporal_patch_size=2, merge_size=2
    )
    processor = Qwen2VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=CHAT_TEMPLATE,
    )
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL}
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden,
            "intermediate_size": 2 * hidden,
            "num_hidden_layers": layers,
            "num_attention_heads": hidden // 16,
            "num_key_value_heads": 1,
            "max_position_embeddings": 2048,
            "rope_parameters": {"rope_type": "default", "mrope_section": [2, 3, 3]},
            "tie_word_embeddings": False,
            "initializer_range": initializer_range,
            "bos_token_id": None,
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 1,
            "embed_dim": 32,
            "hidden_size": hidden,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 8,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
        initializer_range=initializer_range,
    )
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config)
    if lm_head_std is not None:
        with torch.no_grad():
            model.lm_head.weight.normal_(0.0, lm_head_std)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


__all__ = ["CHAT_TEMPLATE", "build_tiny_qwen2vl"]
