"""Tiny random checkpoints of the VLM families people evaluate, built offline from their real classes.

Each builder writes a folder that ``AutoProcessor`` / ``AutoModelForImageTextToText``
load like the released checkpoint: the family's own config class (sizes cut to one or
two layers of width 32-64), its image processor, its video processor where it has one,
a byte-level BPE tokenizer trained here with the family's special tokens, and a chat
template that renders like the released model's (``CHAT_TEMPLATES``; each names the
checkpoint it follows). Weights are random, seeded; nothing is downloaded. A folder
is 0.2-1 MB and builds in about a second on CPU. The generated text is noise: tests use
these to check what reaches the model, not what it answers.

Sizes: text hidden 64 (2 heads of 32, one KV head), vision hidden 32, images resized
to 32-64 pixels a side, so a frame is 4-16 tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hf_tiny import IDEFICS3_SPECIAL, TINY_SIGLIP, build_tiny_idefics3, train_tokenizer
from tests.hf_tiny_qwen2vl import SPECIAL as QWEN_SPECIAL

# --- chat templates (rendering like the released checkpoints' templates) ---------------

_QWEN2_VL = (  # Qwen/Qwen2-VL-2B-Instruct, Qwen/Qwen2.5-VL-3B-Instruct: default system prompt
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}{% set image_count.value = image_count.value + 1 %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' %}{% set video_count.value = video_count.value + 1 %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_QWEN3_VL = (  # Qwen/Qwen3-VL-2B-Instruct: no default system prompt
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_LLAVA_ONEVISION = (  # llava-hf/llava-onevision-qwen2-0.5b-ov-hf: images, then videos, then text
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + ' ' }}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'video') %}"
    "{{ '<video>' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ '\\n' + content['text'] }}{% endfor %}{{ '<|im_end|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_SMOLVLM2 = (  # HuggingFaceTB/SmolVLM2-256M-Video-Instruct
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% elif line['type'] == 'video' %}"
    "{{ '<video>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

_GEMMA3 = (  # google/gemma-3-4b-it: writes {{ bos_token }} itself; system joins the first user turn
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set first_user_prefix = '' -%}{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else '') }}"
    "{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}"
    "{%- endfor -%}{{ '<end_of_turn>\\n' }}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)

_INTERNVL = (  # OpenGVLab/InternVL3-1B-hf
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}{{ '<IMG_CONTEXT>\\n' }}"
    "{% elif content['type'] == 'video' %}{{ '<video>\\n' }}"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_LLAVA_NEXT_VIDEO = (  # llava-hf/LLaVA-NeXT-Video-7B-hf: Vicuna style, BOS from the tokenizer
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>\\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'video') %}"
    "{{ '<video>\\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' ' }}{% endfor %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)

CHAT_TEMPLATES = {
    "qwen2_vl": _QWEN2_VL,
    "qwen2_5_vl": _QWEN2_VL,
    "qwen3_vl": _QWEN3_VL,
    "llava_onevision": _LLAVA_ONEVISION,
    "smolvlm2": _SMOLVLM2,
    "gemma3": _GEMMA3,
    "internvl": _INTERNVL,
    "llava_next_video": _LLAVA_NEXT_VIDEO,
}


_TEXT = {  # shared tiny decoder sizes (head_dim 32)
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "max_position_embeddings": 4096,
}


def _qwen_tokenizer(*extra: str, extra_special_tokens: dict[str, str] | None = None) -> Any:
    return train_tokenizer(
        [*QWEN_SPECIAL, *extra],
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        extra_special_tokens=extra_special_tokens,
    )


def _ids(tokenizer: Any, *tokens: str) -> list[int]:
    return [int(tokenizer.convert_tokens_to_ids(t)) for t in tokens]


def _save(
    model_cls: Any,
    config: Any,
    processor: Any,
    tok: Any,
    out: Path,
    seed: int,
    eos: list[int],
    *,
    hub_vision_names: bool = False,
) -> Path:
    """Build ``model_cls(config)`` with seeded random weights and save it with ``processor``.

    ``hub_vision_names``: write a SigLIP/CLIP tower's weights as the released
    checkpoints name them (``vision_tower.vision_model.*``). transformers 5 saves
    them as ``vision_tower.*``, which it loads back but vLLM 0.32 does not.
    """
    import torch

    torch.manual_seed(seed)
    model = model_cls(config)
    model.generation_config.eos_token_id = eos if len(eos) > 1 else eos[0]
    model.generation_config.pad_token_id = tok.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    if hub_vision_names:
        from safetensors.torch import load_file, save_file

        weights = out / "model.safetensors"
        prefix, nested = "vision_tower.", "vision_tower.vision_model."
        tensors = {
            (
                nested + k[len(prefix) :]
                if k.startswith(prefix) and not k.startswith(nested)
                else k
            ): v
            for k, v in load_file(str(weights)).items()
        }
        save_file(tensors, str(weights), metadata={"format": "pt"})
    return out


# --- Qwen2-VL / Qwen2.5-VL / Qwen3-VL -------------------------------------------------

_QWEN_PIXELS = {"min_pixels": 28 * 28, "max_pixels": 56 * 56}  # at most 2x2 merged tokens


def _qwen_vl(
    out: Path,
    seed: int,
    classes: tuple[Any, Any, Any],
    *,
    vision: dict[str, Any],
    image_processor: Any,
    video_processor: Any,
    template: str,
    rope: dict[str, Any] | None = None,
    **text: Any,
) -> Path:
    """A Qwen-VL family checkpoint: ``classes`` = (config, model, processor) classes."""

    config_cls, model_cls, processor_cls = classes
    tok = _qwen_tokenizer()
    names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    tokens = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
    config = config_cls(
        text_config={
            **_TEXT,
            "vocab_size": len(tok),
            "rope_parameters": {"rope_type": "default", "mrope_section": [4, 6, 6], **(rope or {})},
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
            **text,
        },
        vision_config=vision,
        **dict(zip(names, _ids(tok, *tokens), strict=True)),
    )
    processor = processor_cls(
        image_processor=image_processor,
        video_processor=video_processor,
        tokenizer=tok,
        chat_template=template,
    )
    return _save(model_cls, config, processor, tok, out, seed, [tok.eos_token_id])


def build_qwen2_vl(out: Path, *, seed: int = 0) -> Path:
    """Qwen2-VL (``Qwen/Qwen2-VL-2B-Instruct`` layout): 14-px patches, 2x2 merge, 2-frame temporal patches."""
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    return _qwen_vl(
        out,
        seed,
        (Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor),
        vision={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "mlp_ratio": 2},
        image_processor=Qwen2VLImageProcessor(**_QWEN_PIXELS),
        video_processor=Qwen2VLVideoProcessor(**_QWEN_PIXELS),
        template=_QWEN2_VL,
        bos_token_id=None,
    )


def build_qwen2_5_vl(out: Path, *, seed: int = 0) -> Path:
    """Qwen2.5-VL (``Qwen/Qwen2.5-VL-3B-Instruct`` layout): windowed vision attention, absolute time (2 tokens/s)."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    return _qwen_vl(
        out,
        seed,
        (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor),
        vision={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 64,
            "window_size": 56,
            "fullatt_block_indexes": [1],
            "tokens_per_second": 2,
        },
        image_processor=Qwen2VLImageProcessor(**_QWEN_PIXELS),
        video_processor=Qwen2VLVideoProcessor(**_QWEN_PIXELS),
        template=_QWEN2_VL,
        bos_token_id=None,
    )


def build_qwen3_vl(out: Path, *, seed: int = 0) -> Path:
    """Qwen3-VL (``Qwen/Qwen3-VL-2B-Instruct`` layout): 16-px patches, deepstack, ``<t seconds>`` frame stamps."""
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    pixels = {"size": {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}}
    return _qwen_vl(
        out,
        seed,
        (Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor),
        vision={
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 64,
            "num_position_embeddings": 16,
            "deepstack_visual_indexes": [0],
        },
        image_processor=Qwen2VLImageProcessor(patch_size=16, **pixels),
        video_processor=Qwen3VLVideoProcessor(patch_size=16, **pixels),
        template=_QWEN3_VL,
        rope={"mrope_interleaved": True},
        head_dim=32,
    )


# --- LLaVA-OneVision / LLaVA-NeXT-Video -------------------------------------------------


def build_llava_onevision(out: Path, *, seed: int = 0) -> Path:
    """LLaVA-OneVision (``llava-hf/llava-onevision-qwen2-0.5b-ov-hf`` layout): SigLIP + Qwen2, anyres tiles."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
    )

    tok = _qwen_tokenizer("<image>", "<video>")
    image_id, video_id = _ids(tok, "<image>", "<video>")
    pinpoints = [[32, 32], [32, 64], [64, 32], [64, 64]]
    config = LlavaOnevisionConfig(
        vision_config={"model_type": "siglip_vision_model", **TINY_SIGLIP},
        text_config={
            "model_type": "qwen2",
            **_TEXT,
            "vocab_size": len(tok),
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
        },
        image_token_index=image_id,
        video_token_index=video_id,
        image_grid_pinpoints=pinpoints,
        vision_aspect_ratio="anyres_max_9",
        vision_feature_select_strategy="full",
    )
    size = {"height": 32, "width": 32}
    processor = LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessor(size=size, image_grid_pinpoints=pinpoints),
        video_processor=LlavaOnevisionVideoProcessor(size=size),
        tokenizer=tok,
        num_image_tokens=16,
        vision_feature_select_strategy="full",
        chat_template=_LLAVA_ONEVISION,
    )
    return _save(
        LlavaOnevisionForConditionalGeneration,
        config,
        processor,
        tok,
        out,
        seed,
        [tok.eos_token_id],
        hub_vision_names=True,
    )


def build_llava_next_video(out: Path, *, seed: int = 0) -> Path:
    """LLaVA-NeXT-Video (``llava-hf/LLaVA-NeXT-Video-7B-hf`` layout): CLIP + Llama, pooled video tokens."""
    from transformers import (
        LlavaNextImageProcessor,
        LlavaNextVideoConfig,
        LlavaNextVideoForConditionalGeneration,
        LlavaNextVideoProcessor,
        LlavaNextVideoVideoProcessor,
    )

    tok = train_tokenizer(
        ["<unk>", "<s>", "</s>", "<video>", "<image>", "<pad>"],
        bos="<s>",
        eos="</s>",
        pad="<pad>",
        prepend_bos=True,
    )
    image_id, video_id = _ids(tok, "<image>", "<video>")
    # 16-px frames of 4-px patches: vLLM's video pooler needs image_size >= patch_size**2
    pinpoints = [[16, 16], [16, 32], [32, 16], [32, 32]]
    config = LlavaNextVideoConfig(
        vision_config={
            "model_type": "clip_vision_model",
            **TINY_SIGLIP,
            "image_size": 16,
            "patch_size": 4,
            "projection_dim": 32,
        },
        text_config={
            "model_type": "llama",
            **_TEXT,
            "vocab_size": len(tok),
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
        },
        image_token_index=image_id,
        video_token_index=video_id,
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_seq_length=16,
        video_seq_length=4,
        spatial_pool_stride=2,
    )
    crop = {"height": 16, "width": 16}
    processor = LlavaNextVideoProcessor(
        video_processor=LlavaNextVideoVideoProcessor(size={"shortest_edge": 16}, crop_size=crop),
        image_processor=LlavaNextImageProcessor(
            size={"shortest_edge": 16}, crop_size=crop, image_grid_pinpoints=pinpoints
        ),
        tokenizer=tok,
        patch_size=4,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_LLAVA_NEXT_VIDEO,
    )
    return _save(
        LlavaNextVideoForConditionalGeneration,
        config,
        processor,
        tok,
        out,
        seed,
        [tok.eos_token_id],
        hub_vision_names=True,
    )


# --- SmolVLM2 ----------------------------------------------------------------------------


def build_smolvlm2(out: Path, *, seed: int = 0) -> Path:
    """SmolVLM2 (``HuggingFaceTB/SmolVLM2-256M-Video-Instruct`` layout): ``Frame from mm:ss`` video prompt."""
    from transformers import (
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    special = [*IDEFICS3_SPECIAL, "<video>"]
    tok = train_tokenizer(
        special, bos="<|im_start|>", eos="<end_of_utterance>", pad="<|endoftext|>"
    )
    (image_id,) = _ids(tok, "<image>")
    config = SmolVLMConfig(
        text_config={
            "model_type": "llama",
            **_TEXT,
            "vocab_size": len(tok),
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
        },
        vision_config=dict(TINY_SIGLIP),
        scale_factor=2,
        image_token_id=image_id,
        pad_token_id=tok.pad_token_id,
    )
    edge = {"longest_edge": 32}
    processor = SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(
            size=edge, max_image_size=edge, do_image_splitting=False
        ),
        video_processor=SmolVLMVideoProcessor(size=edge, max_image_size=edge),
        tokenizer=tok,
        image_seq_len=4,
        chat_template=_SMOLVLM2,
    )
    return _save(
        SmolVLMForConditionalGeneration, config, processor, tok, out, seed, [tok.eos_token_id]
    )


# --- Gemma 3 -----------------------------------------------------------------------------


def build_gemma3(out: Path, *, seed: int = 0) -> Path:
    """Gemma 3 (``google/gemma-3-4b-it`` layout): SigLIP + Gemma 3 text; the tokenizer adds ``<bos>`` and so does the template."""
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
    )

    special = [
        "<pad>",
        "<eos>",
        "<bos>",
        "<unk>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<start_of_image>",
        "<end_of_image>",
        "<image_soft_token>",
    ]
    tok = train_tokenizer(
        special,
        bos="<bos>",
        eos="<eos>",
        pad="<pad>",
        prepend_bos=True,
        extra_special_tokens={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
        added_tokens=["\n", "\n\n", "\n\n\n", "\n\n\n\n"],  # single tokens in Gemma's vocab
    )
    boi, eoi, image, end_of_turn = _ids(
        tok, "<start_of_image>", "<end_of_image>", "<image_soft_token>", "<end_of_turn>"
    )
    config = Gemma3Config(
        text_config={
            **_TEXT,
            "num_hidden_layers": 2,
            "head_dim": 32,
            "query_pre_attn_scalar": 32,
            "sliding_window": 64,
            "layer_types": ["sliding_attention", "full_attention"],
            "vocab_size": len(tok),
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": [tok.eos_token_id, end_of_turn],
            "pad_token_id": tok.pad_token_id,
        },
        vision_config={**TINY_SIGLIP, "vision_use_head": False},
        mm_tokens_per_image=4,
        boi_token_index=boi,
        eoi_token_index=eoi,
        image_token_index=image,
    )
    processor = Gemma3Processor(
        image_processor=Gemma3ImageProcessor(size={"height": 32, "width": 32}),
        tokenizer=tok,
        image_seq_length=4,
        chat_template=_GEMMA3,
    )
    return _save(
        Gemma3ForConditionalGeneration,
        config,
        processor,
        tok,
        out,
        seed,
        [tok.eos_token_id, end_of_turn],
        hub_vision_names=True,
    )


# --- InternVL (HF-native) -----------------------------------------------------------------


def build_internvl(out: Path, *, seed: int = 0) -> Path:
    """InternVL 3 in HF format (``OpenGVLab/InternVL3-1B-hf`` layout): InternViT + Qwen2, pixel shuffle 0.5."""
    from transformers import (
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        InternVLVideoProcessor,
    )

    tok = _qwen_tokenizer(
        "<img>",
        "</img>",
        "<IMG_CONTEXT>",
        "<video>",
        extra_special_tokens={
            "start_image_token": "<img>",
            "end_image_token": "</img>",
            "context_image_token": "<IMG_CONTEXT>",
            "video_token": "<video>",
        },
    )
    (context_id,) = _ids(tok, "<IMG_CONTEXT>")
    config = InternVLConfig(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": [32, 32],
            "patch_size": [8, 8],
        },
        text_config={
            "model_type": "qwen2",
            **_TEXT,
            "vocab_size": len(tok),
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
        },
        image_token_id=context_id,
        image_seq_length=4,
        downsample_ratio=0.5,
    )
    size = {"height": 32, "width": 32}
    processor = InternVLProcessor(
        image_processor=GotOcr2ImageProcessor(size=size, crop_to_patches=False),
        video_processor=InternVLVideoProcessor(size=size),
        tokenizer=tok,
        image_seq_length=4,
        chat_template=_INTERNVL,
    )
    return _save(
        InternVLForConditionalGeneration, config, processor, tok, out, seed, [tok.eos_token_id]
    )


# --- the table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """One family: how to build it and what it takes.

    Attributes:
        name: short name (test ids, folder names).
        build: ``build(out, seed=...) -> out``.
        video: has a video processor (``video_input=video`` works).
        images: takes images (LLaVA-NeXT-Video does, but vLLM serves it video-only).
        vllm_images: vLLM 0.32 serves it with images (LLaVA-NeXT-Video: video only).
        vllm_video: vLLM 0.32 serves it with video (SmolVLM2: images only).
        vllm_same_image_tokens: vLLM's prompt for several images equals ``hf:``'s
            (LLaVA-OneVision: vLLM tiles every image, ``hf:`` gives each of several one tile).
        timestamps: how the processor writes frame times into the prompt from the
            metadata mmrobust passes: ``"qwen2_5"`` (``second_per_grid_ts``),
            ``"qwen3"`` (``<t seconds>`` per 2-frame patch), ``"smolvlm"``
            (``Frame from mm:ss`` in an ``H:MM:SS`` video), or ``None``.
    """

    name: str
    build: Callable[..., Path]
    video: bool
    images: bool = True
    timestamps: str | None = None
    vllm_images: bool = True
    vllm_video: bool | None = None  # None: as ``video``
    vllm_same_image_tokens: bool = True


FAMILIES = {
    f.name: f
    for f in (
        Family("qwen2_vl", build_qwen2_vl, video=True),
        Family("qwen2_5_vl", build_qwen2_5_vl, video=True, timestamps="qwen2_5"),
        Family("qwen3_vl", build_qwen3_vl, video=True, timestamps="qwen3"),
        Family("llava_onevision", build_llava_onevision, video=True, vllm_same_image_tokens=False),
        Family("smolvlm2", build_smolvlm2, video=True, timestamps="smolvlm", vllm_video=False),
        Family("idefics3", build_tiny_idefics3, video=False),
        Family("gemma3", build_gemma3, video=False),
        Family("internvl", build_internvl, video=True),
        Family("llava_next_video", build_llava_next_video, video=True, vllm_images=False),
    )
}

__all__ = ["CHAT_TEMPLATES", "FAMILIES", "Family"]
