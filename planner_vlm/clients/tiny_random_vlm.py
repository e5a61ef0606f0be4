"""Write a tiny, randomly initialised Qwen2-VL model directory, built offline from a config.

For plumbing tests and demos of the ``transformers`` backend only: its output is noise. Nothing
is downloaded. The tokenizer is a byte-level BPE (Qwen2-VL's special tokens, 256 byte symbols, merges
learned in well under a second from tandem's prompt templates) built with the ``tokenizers`` library; the processor is ``Qwen2VLProcessor``
(``Qwen2VLImageProcessor`` + ``Qwen2VLVideoProcessor``) with a minimal Qwen-style chat template; the
model is ``Qwen2VLForConditionalGeneration`` with 2 text layers of width 32 and 1 vision block.
The directory loads with ``AutoProcessor`` / ``AutoModelForImageTextToText``.

``ascii_only=True`` restricts the byte alphabet to tab, newline and printable ASCII, so every token decodes to
ASCII: random weights then cannot emit invalid UTF-8 (a server such as llama.cpp's answers that with HTTP 500);
other characters of a prompt are dropped by the tokenizer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Qwen2-VL's special tokens (same strings as the released checkpoints).
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|image_pad|>", "<|video_pad|>")

#: The bytes of the ``ascii_only`` alphabet: tab, newline, carriage return and printable ASCII (0x20-0x7e).
ASCII_BYTES = (0x09, 0x0A, 0x0D, *range(0x20, 0x7F))

#: A minimal Qwen chat template (system/user/assistant turns; images as vision_start/pad/end).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_tiny_qwen2_vl(
    out_dir: str | Path,
    *,
    hidden_size: int = 32,
    num_layers: int = 2,
    vision_depth: int = 1,
    max_pixels: int = 28 * 28 * 16,
    vocab_size: int = 1024,
    seed: int = 0,
    ascii_only: bool = False,
) -> dict[str, Any]:
    """Build and save the tiny model + processor to ``out_dir`` (created if needed).

    Args:
        hidden_size: text and vision width (must be divisible by 4).
        num_layers: text decoder layers.
        vision_depth: vision transformer blocks.
        max_pixels: the image processor resizes every image to at most this many pixels
            (28 * 28 * 16 -> at most 16 visual tokens per image after the 2x2 merge).
        vocab_size: BPE vocabulary size (256 byte symbols + merges + special tokens).
        seed: torch seed of the random weights.
        ascii_only: byte alphabet of :data:`ASCII_BYTES` only (see the module docstring).

    Returns:
        ``{"path", "n_params", "vocab_size"}``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    # byte-level BPE trained in a blink on tandem's own prompt templates: any text still encodes (byte
    # fallback through the 256-symbol alphabet) and prompts take ~3x fewer tokens than bytes
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    corpus = _training_corpus()
    if ascii_only:
        from transformers.convert_slow_tokenizer import (
            bytes_to_unicode,  # GPT-2's byte -> printable character map
        )

        byte_chars = bytes_to_unicode()
        alphabet = [byte_chars[b] for b in ASCII_BYTES]
        corpus = ["".join(ch for ch in t if ord(ch) in ASCII_BYTES) for t in corpus]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
                                  initial_alphabet=alphabet, limit_alphabet=len(alphabet))
    tok.train_from_iterator(corpus, trainer=trainer)
    ids = {s: tok.token_to_id(s) for s in SPECIAL_TOKENS}
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=max_pixels),
        tokenizer=fast,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=CHAT_TEMPLATE,
    )
    vocab_size = tok.get_vocab_size()
    head_dim = hidden_size // 4
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": vocab_size, "hidden_size": hidden_size, "intermediate_size": 2 * hidden_size,
            "num_hidden_layers": num_layers, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 8192,
            # mrope sections (temporal, height, width) sum to head_dim / 2
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": [head_dim // 8, head_dim // 8, head_dim // 2 - 2 * (head_dim // 8)]},
            "bos_token_id": None, "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={"depth": vision_depth, "embed_dim": hidden_size, "hidden_size": hidden_size, "num_heads": 2,
                       "mlp_ratio": 2, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=None, eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
    )
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = None
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return {"path": str(out), "n_params": sum(p.numel() for p in model.parameters()), "vocab_size": vocab_size}


def _training_corpus() -> list[str]:
    """tandem's prompt templates and a sample plan reply (deterministic, offline)."""
    from importlib import resources

    texts = [f.read_text(encoding="utf-8") for f in resources.files("planner_vlm.prompts").iterdir()
             if f.name.endswith(".md")]
    texts.append('{"rationale": "red is on blue", "done": [{"skill": "stack", "args": ["red", "blue"], '
                 '"text": "stack the red cube on the blue cube"}], "remaining": [], "next_trace": null, '
                 '"type":"object","properties":{"enum":["agentview","wrist"],"additionalProperties":false}}')
    return texts * 4
