"""A real OpenAI-compatible server on this CPU: `transformers serve` over a tiny randomly initialised
model and tokenizer built here, run by the generic server target for one stress trial.

Its outputs are nonsense (random weights), so sessions are classified `no_tool` or `malformed`,
but the server, its HTTP API, its streaming and its shutdown are real. Skipped without
transformers (`pip install 'heisenbisect[serve-cpu]'`); offline: the model is a local folder and
the hub is never asked (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
from pathlib import Path

import psutil
import pytest

from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.registry import make_target

pytest.importorskip("transformers", reason="needs transformers[serving]: pip install 'heisenbisect[serve-cpu]'")
pytest.importorskip("fastapi", reason="needs transformers[serving]: pip install 'heisenbisect[serve-cpu]'")

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] or '' }}<|im_end|>\n{% endfor %}"
    "{% if tools %}<|im_start|>tools\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_model(folder: Path) -> Path:
    """A one-layer Llama with a byte-level BPE tokenizer trained on two lines, saved as a model folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(["get the weather in Paris", '{"name": "get_weather", "arguments": {}}'] * 10, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   chat_template=CHAT_TEMPLATE)
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_transformers_serve_runs_a_classified_stress_trial_and_leaves_no_process(tmp_path):
    model = tiny_model(tmp_path / "tiny")
    serve = shutil.which("transformers", path=str(Path(sys.executable).parent))
    assert serve, "transformers[serving] installs the `transformers` command beside this interpreter"
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"""\
study: real-cpu-server
target:
  timeout: 600
  env: {{HF_HUB_OFFLINE: "1", HF_HUB_CACHE: "{tmp_path / 'hub'}"}}
  server:
    launch: [{serve}, serve, "{{model}}", --host, "{{host}}", --port, "{{port}}", --device, cpu]
    model: {model}
    env: {{HF_HUB_OFFLINE: "1", HF_HUB_CACHE: "{tmp_path / 'hub'}"}}
    ready: {{path: /health, status: 200}}
    startup_timeout: 600
    workload: {{sessions: 2, rounds: 1, max_tokens: 8, request_timeout: 300, stream: both}}
""")
    target = make_target(parse_spec(spec.read_text(), str(spec)), tmp_path)
    try:
        outcome = target.execute(Trial("baseline-0000", Config(()), 0, 1), tmp_path / "t.log", threading.Event())
    finally:
        target.close()
    log = (tmp_path / "t.log").read_text()
    server = int(re.search(r"pid (\d+);", log).group(1))
    assert outcome.status is TrialStatus.OK, outcome.detail + log[-3000:]
    assert outcome.total == 2 and outcome.failures == 2, "random weights never call the tool: both sessions fail"
    assert "CORRUPTION sessions: 2/2" in outcome.detail
    assert "(streamed)" in log, "one session streamed"
    assert not psutil.pid_exists(server) or psutil.Process(server).status() == psutil.STATUS_ZOMBIE
    left = [p for p in psutil.Process().children(recursive=True) if str(model) in " ".join(p.cmdline())]
    assert not left, "the server's whole tree is gone"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_transformers_serve_answers_alone_and_under_load_alike(tmp_path):
    """The reference check's negative control on a real server: greedy answers under load equal
    the answers alone (`transformers serve` without continuous batching decodes each request
    alone), so nothing diverges; the format checks are off (random weights never call a tool)."""
    model = tiny_model(tmp_path / "tiny")
    serve = shutil.which("transformers", path=str(Path(sys.executable).parent))
    assert serve, "transformers[serving] installs the `transformers` command beside this interpreter"
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"""\
study: real-cpu-reference
target:
  timeout: 600
  server:
    launch: [{serve}, serve, "{{model}}", --host, "{{host}}", --port, "{{port}}", --device, cpu]
    model: {model}
    env: {{HF_HUB_OFFLINE: "1", HF_HUB_CACHE: "{tmp_path / 'hub'}"}}
    ready: {{path: /health, status: 200}}
    startup_timeout: 600
    workload:
      sessions: 4
      rounds: 2
      max_tokens: 8
      request_timeout: 300
      checks: {{leak: {{enabled: false}}, malformed: {{enabled: false}}, no_tool: {{enabled: false}},
               reference: {{enabled: true}}}}
""")
    target = make_target(parse_spec(spec.read_text(), str(spec)), tmp_path)
    try:
        outcome = target.execute(Trial("baseline-0000", Config(()), 0, 1), tmp_path / "t.log", threading.Event())
    finally:
        target.close()
    log = (tmp_path / "t.log").read_text()
    assert outcome.status is TrialStatus.OK, outcome.detail + log[-3000:]
    assert outcome.total == 4 and outcome.failures == 0, outcome.detail
    assert outcome.metrics["reference_compared"] == 8, "every round of every session was compared"
    assert outcome.metrics["reference_requests"] == 8
