"""A small randomly initialised Llama (8 layers, hidden 1024) and a byte-level BPE tokenizer with a
chat template, saved as a model folder for `transformers serve`; then, in-process, how close the
greedy choice is to the runner-up on the stress prompts (the top-1/top-2 logprob gaps), which
`transformers serve` does not report (it ignores `logprobs`).

    python3 docs/gpu-reference/tiny_model.py FOLDER [GAPS_JSON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] or '' }}<|im_end|>\n"
    "{% endfor %}{% if tools %}<|im_start|>tools\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "What is the weather in Paris in celsius? Search the docs for CUDA graph capture.",
    '{"name": "get_weather", "arguments": {"city": "Tokyo", "unit": "fahrenheit"}}',
    "Read the file src/main.py from line 3. Compute 17 * 23 + 4 with the calculator.",
    "KV cache eviction, tensor parallel all-reduce, speculative decoding, README.md, Makefile",
]


def build(folder: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="<unk>", chat_template=CHAT_TEMPLATE,
    )
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(fast), hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
        num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096,
        bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=0.05,
        torch_dtype="bfloat16",
    )
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    return folder


def gaps(folder: Path, out: Path, dtype: str) -> dict:
    """Top-1 minus top-2 logprob at each greedy step of a few chat prompts, alone (batch 1)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).cuda()
    found = []
    for text in CORPUS:
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, return_tensors="pt"
        )
        ids = (ids["input_ids"] if hasattr(ids, "keys") else ids).cuda()
        generated = model.generate(
            ids, max_new_tokens=24, do_sample=False, output_scores=True,
            return_dict_in_generate=True,
        )
        for score in generated.scores:
            top = torch.log_softmax(score[0].float(), -1).topk(2).values
            found.append(float(top[0] - top[1]))
    found.sort()
    summary = {
        "dtype": dtype,
        "steps": len(found),
        "median_gap": found[len(found) // 2],
        **{f"below_{m}": sum(g < m for g in found) for m in (0.01, 0.1, 0.5, 1.0)},
    }
    out.write_text(json.dumps({**summary, "gaps": found}, indent=1))
    return summary


if __name__ == "__main__":
    target = Path(sys.argv[1])
    if len(sys.argv) > 2:
        for dtype in ("bfloat16", "float32"):
            print(json.dumps(gaps(target, Path(sys.argv[2] + f".{dtype}.json"), dtype)))
    else:
        print(build(target))
