"""A small causal language model that plays budgetgym through TRL's tool loop, made here from scratch.

Nothing is downloaded: :func:`make_tiny_lm` trains a byte-level BPE tokenizer (``tokenizers``) on
the suite's own text (the system prompts with their tools, and scripted episodes rendered as chats)
and builds a randomly initialised Llama-style model from a ``transformers`` config. Its chat template
is the Qwen 2.5 template that the installed TRL ships (read at build time, not copied here), so TRL
recognises it, parses its ``<tool_call>`` blocks and keeps its prompts prefix-preserving.

The conversations are exactly what :class:`~budgetgym.integrations.trl.BudgetgymTRLEnv` gives TRL:
the row's system message, the first observation, then per turn an assistant message calling ``act``
and the tool message with what ``act`` returned. :func:`scripted_conversations` plays a scripted
agent (the noisy oracle) through that env; :func:`supervised_fine_tune` trains on the assistant
tokens only (the base policy of the study); :class:`LMAgent` is the model as an evaluation agent
(sampling with the KV cache of ``generate``), which sees only the conversation.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from budgetgym.integrations.episode import BudgetSpec
from budgetgym.integrations.trl import BudgetgymTRLEnv, TRLEnvironmentFactory, answer_text, system_message, trl_rows

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
#: Markers of the chat template's tool calls: ordinary tokens (decoded with the text, so TRL's parser sees them).
MARKER_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>")
MAX_TOKEN_CHARS = 16
TOOLS = [BudgetgymTRLEnv.act]  # what TRL renders in the prompt: the env's public methods


@dataclass(frozen=True)
class ModelSize:
    """A Llama-style config's sizes."""

    hidden: int = 256
    layers: int = 4
    heads: int = 4
    intermediate: int = 768
    vocab: int = 4096
    context: int = 4096


SIZES = {"micro": ModelSize(hidden=32, layers=1, heads=2, intermediate=64, vocab=1024),
         "tiny": ModelSize(hidden=64, layers=2, heads=2, intermediate=192, vocab=4096),
         "small": ModelSize()}


def chat_template() -> str:
    """The Qwen 2.5 chat template as the installed TRL ships it (TRL knows how to parse its tool calls)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def scripted_conversations(env_ids: Sequence[str], *, agent_p: float, episodes_per_task: int = 1,
                           tasks: int | None = None, task_ids: Sequence[str] | None = None, split: str = "train",
                           budget: BudgetSpec | None = None, seed: int = 0,
                           env_kwargs: dict[str, Any] | None = None) -> list[list[dict[str, Any]]]:
    """Chats of the noisy oracle (a random action with probability ``agent_p`` each turn) in the
    messages TRL builds: each episode started by :meth:`BudgetgymTRLEnv.reset` for the row, played by
    the one rollout loop, every answer what ``act`` would have returned (:func:`answer_text`)."""
    from budgetgym.core.rollout import rollout
    from budgetgym.eval.agents.scripted import NoisyOracleAgent

    factory = TRLEnvironmentFactory(budget or BudgetSpec(), **(env_kwargs or {}))
    env = factory()
    agent = NoisyOracleAgent(p=agent_p)
    conversations = []
    try:
        for env_id in env_ids:
            for row in trl_rows(env_id, split=split, seed=seed, limit=tasks, task_ids=task_ids):
                for attempt in range(episodes_per_task):
                    row = {**row, "seed": seed + attempt}
                    observation = env.reset(**row)  # the episode TRL would start for this row
                    episode = env.episode
                    agent.reset(episode.env, observation, episode.info, int(row["seed"]))
                    played = rollout(episode.env, lambda o, i, e: agent.act(o, i), start=(observation, episode.info))
                    messages = [row["prompt"][0], {"role": "user", "content": observation}]
                    for step in played.steps:
                        messages.append(act_message(step.action))
                        messages.append({"role": "tool", "name": "act",
                                         "content": answer_text(step.observation, step.info,
                                                                step.terminated or step.truncated)})
                    messages.append({"role": "assistant", "content": "Done."})  # the reply that ends the rollout
                    conversations.append(messages)
    finally:
        factory.close()
    return conversations


def act_message(action: str) -> dict[str, Any]:
    """The assistant message that calls ``act`` with ``action`` (as TRL's parser returns it)."""
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "act", "arguments": {"action": action}}}]}


def corpus(conversations: Iterable[Sequence[dict[str, Any]]]) -> list[str]:
    """The tokenizer's training text: every message's content and every action."""
    texts = []
    for messages in conversations:
        for message in messages:
            if message.get("content"):
                texts.append(message["content"])
            for call in message.get("tool_calls") or []:
                texts.append(json.dumps(call["function"], ensure_ascii=False))
    return texts


def make_tiny_lm(out: str | Path, conversations: Sequence[Sequence[dict[str, Any]]], *, size: str | ModelSize = "tiny",
                 seed: int = 0) -> Path:
    """Train a tokenizer on ``conversations``' text and save a fresh model and it to ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    dims = SIZES[size] if isinstance(size, str) else size
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    # No split at spaces: merges may cross words, so the long system messages every chat repeats take
    # fewer tokens; tokens of at most MAX_TOKEN_CHARS characters keep actions spelled out, never one
    # token for a whole action the corpus happens to repeat.
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=dims.vocab, special_tokens=list(SPECIAL_TOKENS) + list(MARKER_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
                                  max_token_length=MAX_TOKEN_CHARS)
    bpe.train_from_iterator(corpus(conversations), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        padding_side="left", additional_special_tokens=[])
    tokenizer.chat_template = chat_template()
    tokenizer.save_pretrained(out)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=dims.hidden, num_hidden_layers=dims.layers,
                         num_attention_heads=dims.heads, num_key_value_heads=dims.heads,
                         intermediate_size=dims.intermediate, max_position_embeddings=dims.context,
                         tie_word_embeddings=True, bos_token_id=None,
                         eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = config.eos_token_id
    model.save_pretrained(out)
    return out


def load(model_dir: str | Path, device: str = "cpu") -> tuple[Any, Any]:
    """The model (float32, on ``device``) and tokenizer saved in ``model_dir`` (any HF causal LM directory)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device)
    return model, tokenizer


def encode_conversation(tokenizer: Any, messages: Sequence[dict[str, Any]], max_length: int) -> tuple[list[int], list[int]]:
    """Token ids of the rendered chat and labels that keep only the assistant's tokens (-100 elsewhere),
    cut to the last ``max_length`` tokens' worth of whole turns from the start."""
    render = lambda msgs, gen=False: tokenizer.apply_chat_template(list(msgs), tools=TOOLS, tokenize=False,
                                                                     add_generation_prompt=gen)
    spans, text = [], render(messages)
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            start = len(render(messages[:index], gen=True))
            end = len(render(messages[:index + 1]))
            spans.append((start, end))
    encoded = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    ids, labels = encoded["input_ids"], []
    span = 0
    for token, (begin, _) in zip(ids, encoded["offset_mapping"]):
        while span < len(spans) and begin >= spans[span][1]:
            span += 1
        inside = span < len(spans) and spans[span][0] <= begin < spans[span][1]
        labels.append(token if inside else -100)
    return ids[:max_length], labels[:max_length]


def supervised_fine_tune(model: Any, tokenizer: Any, conversations: Sequence[Sequence[dict[str, Any]]], *,
                         steps: int, batch_size: int = 4, learning_rate: float = 3e-3, max_length: int = 2048,
                         seed: int = 0, log: Any = None) -> list[dict[str, float]]:
    """Next-token training on the assistant tokens of ``conversations`` (AdamW, cosine decay); the curve."""
    import torch

    device = next(model.parameters()).device
    encoded = [encode_conversation(tokenizer, c, max_length) for c in conversations]
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    model.train()
    curve = []
    for step in range(steps):
        batch = [encoded[i] for i in rng.choice(len(encoded), size=min(batch_size, len(encoded)), replace=False)]
        width = max(len(ids) for ids, _ in batch)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch], device=device)
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch], device=device)
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch], device=device)
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        curve.append({"step": step, "loss": float(loss.detach())})
        if log is not None and (step % 25 == 0 or step + 1 == steps):
            log(f"  sft step {step}: loss {float(loss.detach()):.3f}")
    model.eval()
    return curve


TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


def reply_action(reply: str) -> str:
    """The ``action`` of the first well-formed ``act`` call in ``reply`` (JSON, as the chat template
    writes it; parsed, never evaluated), else the reply as written (the env says what is wrong with it)."""
    for match in TOOL_CALL.finditer(reply):
        try:
            call = json.loads(match.group(1))
        except ValueError:
            continue
        arguments = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        if isinstance(arguments, dict) and "action" in arguments:
            value = arguments["action"]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return TOOL_CALL.sub("", reply).strip()


class LMAgent:
    """A causal LM as an evaluation agent: it sees the conversation TRL would show it (the system
    message, the observations and its own ``act`` calls), samples a reply with ``generate`` (KV cache
    on), and plays the ``action`` of the reply's ``act`` call; a reply without one is played as
    written (the env says what is wrong with it, the turn is spent). It never sees ``info``.

    ``stats`` counts tokens and seconds in the model, for the benchmark's tokens/s.
    """

    reads_budget = True  # the revealed budget is in the observations it reads

    def __init__(self, model: Any, tokenizer: Any, *, name: str, temperature: float = 1.0,
                 max_new_tokens: int = 96) -> None:
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.temperature, self.max_new_tokens = float(temperature), int(max_new_tokens)
        self.config = {"name": name, "temperature": self.temperature, "max_new_tokens": self.max_new_tokens}
        self.stats = {"tokens": 0, "seconds": 0.0, "calls": 0}
        #: This episode's turns as (prompt ids, reply ids): what GRPO scores (budgetgym.train.lm_grpo).
        self.trace: list[tuple[list[int], list[int]]] = []
        self._messages: list[dict[str, Any]] = []
        self._last_action: str | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation the model has seen so far (a copy; its last reply is added at the next turn)."""
        return [dict(m) for m in self._messages]

    def reset(self, env: Any, observation: str, info: dict[str, Any], seed: int) -> None:
        import torch

        from budgetgym.core.env import text_env

        base = text_env(env)
        tools = info.get("tools") or [tool.openai_schema() for tool in base.tools.values()]
        self._messages = [{"role": "system", "content": system_message(base.instructions, tools)},
                          {"role": "user", "content": observation}]
        torch.manual_seed(int(seed))  # sampling is seeded by the episode seed
        self._last_action = None
        self.trace = []

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self._last_action is not None:
            self._messages.append(act_message(self._last_action))
            self._messages.append({"role": "tool", "name": "act", "content": observation})
        action = reply_action(self.tokenizer.decode(self._generate(), skip_special_tokens=True))
        self._last_action = action
        return action

    def _generate(self) -> list[int]:
        import torch

        prompt = self.tokenizer.apply_chat_template(self._messages, tools=TOOLS, add_generation_prompt=True,
                                                    tokenize=True, return_dict=True, return_tensors="pt")
        device = next(self.model.parameters()).device
        input_ids = prompt["input_ids"].to(device)
        context = self.model.config.max_position_embeddings
        if input_ids.shape[1] + self.max_new_tokens > context:  # keep the system message's start and the latest turns
            input_ids = torch.cat([input_ids[:, :context // 2], input_ids[:, -(context // 2 - self.max_new_tokens):]], 1)
        started = time.perf_counter()
        with torch.no_grad():
            output = self.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                         do_sample=self.temperature > 0, temperature=self.temperature or None,
                                         top_p=1.0, top_k=0, max_new_tokens=self.max_new_tokens, use_cache=True,
                                         pad_token_id=self.tokenizer.pad_token_id,
                                         eos_token_id=self.tokenizer.eos_token_id)
        new = output[0, input_ids.shape[1]:].tolist()
        self.trace.append((input_ids[0].tolist(), new))
        self.stats["seconds"] += time.perf_counter() - started
        self.stats["tokens"] += len(new)
        self.stats["calls"] += 1
        return new


__all__ = ["LMAgent", "ModelSize", "SIZES", "act_message", "chat_template", "encode_conversation", "load",
           "make_tiny_lm", "reply_action", "scripted_conversations", "supervised_fine_tune"]
