"""The tiny random-weight models a scenario serves, each written by a script run with the
vLLM environment's own interpreter (so in the form its transformers reads)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from live_vllm.common import (
    BUILD_TIMEOUT_S,
    MODEL_NEUTRAL,
    REPO,
    LiveTierError,
    log,
    offline_env,
    tail_text,
)
from live_vllm.releases import RELEASES, VLLM_VERSION, Release

__all__ = ["MODEL_NEUTRALS", "MODEL_SCRIPTS", "build_model", "model_argv"]

_MODEL_IMPORTS = r"""
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
"""
_TOKENIZER = r"""
out, corpus = Path(sys.argv[1]), Path(sys.argv[2])
heads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
out.mkdir(parents=True, exist_ok=True)
text = corpus.read_text(encoding="utf-8")
lines = [line for line in text.splitlines() if line.strip()]

tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.post_processor = processors.ByteLevel(trim_offsets=False)
trainer = trainers.BpeTrainer(
    vocab_size=512,
    special_tokens=["<s>", "</s>", "<unk>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False,
)
tok.train_from_iterator(lines, trainer=trainer)
fast = PreTrainedTokenizerFast(
    tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
)
fast.model_max_length = 2048
fast.save_pretrained(out)
"""
_LLAMA = r"""
torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=len(fast),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=heads,
    num_key_value_heads=2,
    max_position_embeddings=2048,
    bos_token_id=fast.bos_token_id,
    eos_token_id=fast.eos_token_id,
    tie_word_embeddings=False,
    torch_dtype="bfloat16",
)
model = LlamaForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(f"tiny Llama: vocab={len(fast)} params={sum(p.numel() for p in model.parameters())}")
"""
_BUILD_MODEL = (
    _MODEL_IMPORTS
    + "from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast\n"
    + _TOKENIZER
    + _LLAMA
)

#: A tiny Gemma-3-style text model: three layers, two of sliding-window attention (window
#: 256, shorter than the 2,048-token context) and one of full attention, so vLLM builds a
#: hybrid KV cache of three groups; head size 32 (the smallest the CPU attention backend
#: takes), 2 heads, 2 KV heads, the tiny Llama's tokenizer.
_GEMMA3 = r"""
torch.manual_seed(0)
config = Gemma3TextConfig(
    vocab_size=len(fast),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=3,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=32,
    query_pre_attn_scalar=32,
    sliding_window=256,
    layer_types=["sliding_attention", "sliding_attention", "full_attention"],
    max_position_embeddings=2048,
    bos_token_id=fast.bos_token_id,
    eos_token_id=fast.eos_token_id,
    pad_token_id=None,
    tie_word_embeddings=True,
    torch_dtype="bfloat16",
)
model = Gemma3ForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(f"tiny Gemma-3: vocab={len(fast)} params={sum(p.numel() for p in model.parameters())}")
"""
_BUILD_HYBRID_MODEL = (
    _MODEL_IMPORTS
    + "from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast\n"
    + _TOKENIZER
    + _GEMMA3
)

#: The models a scenario may serve (``Scenario.model``): the build script of each.
#: ``tiny-llama-hd32`` is the tiny Llama with a head size of 32 on every release: 0.32.0's
#: CPU attention backend takes a head size of 16 at start-up and then fails the first
#: completion with it ("Unsupported CPU attention configuration: head_dim=16"), which
#: kills the engine; a scenario that generates (the gate's canary) serves this one.
MODEL_SCRIPTS: dict[str, str] = {
    "tiny-llama": _BUILD_MODEL,
    "tiny-llama-hd32": _BUILD_MODEL,
    "tiny-gemma3": _BUILD_HYBRID_MODEL,
}
#: A model's own head size, whatever the release's (``Release.head_dim``) is.
_HEAD_DIMS: dict[str, int] = {"tiny-llama-hd32": 32}

#: Where each model is written under the run's root, and the neutral path fixtures name.
MODEL_NEUTRALS: dict[str, str] = {
    "tiny-llama": MODEL_NEUTRAL,
    "tiny-llama-hd32": "/models/tiny-llama-hd32",
    "tiny-gemma3": "/models/tiny-gemma3",
}


def model_argv(out: Path, env_dir: Path, release: Release, model: str) -> list[str]:
    """The command that writes ``model`` to ``out``: the environment's interpreter, the
    build script, the output directory, the tokenizer's corpus (the repository's
    ``LICENSE``) and the number of heads (hidden 64 over the model's head size, else the
    release's)."""
    heads = 64 // _HEAD_DIMS.get(model, release.head_dim)
    script = MODEL_SCRIPTS[model]
    corpus = REPO / "LICENSE"
    return [str(env_dir / "bin" / "python"), "-c", script, str(out), str(corpus), str(heads)]


def build_model(
    out: Path, env_dir: Path, release: Release | None = None, model: str = "tiny-llama"
) -> None:
    """Write the tiny random-weight Llama and its tokenizer to ``out``, with the release's
    own transformers (so in the form it reads) and head size (hidden 64: 4 heads of 16,
    or 2 heads of 32 where 16 is rejected); ``model="tiny-gemma3"``: the hybrid-attention
    Gemma-3-style model instead (``_GEMMA3``), with the same tokenizer."""
    release = release or RELEASES[VLLM_VERSION]
    env = offline_env(
        {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")}
    )
    proc = subprocess.run(
        model_argv(out, env_dir, release, model),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        msg = f"building the model failed:\n{tail_text(proc.stdout + proc.stderr)}"
        raise LiveTierError(msg)
    log(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else f"model at {out}")
