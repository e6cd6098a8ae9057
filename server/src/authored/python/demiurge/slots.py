"""The slot context (``ctx``) bootstrap, input and output slots receive.

Written for the demiurge Rust host: the names and fields the Python
project's slot modules read and write (``ctx.bootstrap.add``,
``ctx.input.raw_text`` / ``add_context``, ``ctx.output.response_text`` /
``send_text``, ``ctx.history.recent_messages``, ``ctx.result``), so its
example cores run unchanged. What a slot asks for is collected here and
returned to the host as one value; the host applies it to the turn.
``ctx.state.core`` / ``ctx.state.session`` ask the host, which checks the
slot's ``state.<scope>.read|write[:target]`` grants and keeps the state in
its database; ``await ctx.tools.call(name, arguments)`` asks the host to run
a tool of the core under ``tool.call:<name>`` and the tool's own capability
and approval; ``ctx.skills.activate(name)`` (input slots) adds a skill to
the turn's system context. Clients this host does not offer to slots
(``ctx.agents``, artifact deliveries) raise a
``RuntimeError`` that says so, which fails the slot under its
``failure_policy``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HISTORY_POLICIES = ("persist", "model_hidden", "transient")


class SlotUnavailable(RuntimeError):
    """A context client this host does not offer to slots."""


class _Unavailable:
    def __init__(self, name, why="is not offered to slots on this demiurge host"):
        self._name = name
        self._why = why

    def __getattr__(self, attr):
        raise SlotUnavailable(f"ctx.{self._name} {self._why} (tried ctx.{self._name}.{attr})")


def _policy(default, write_history=None, history_policy=None):
    if history_policy is not None:
        if history_policy not in HISTORY_POLICIES:
            raise ValueError(f"history_policy must be one of {', '.join(HISTORY_POLICIES)}")
        return history_policy
    if write_history is True:
        return "persist"
    if write_history is False:
        return "transient"
    return default


class _Delivery:
    """``send_text``, ``progress`` and ``notice``, shared by input and output."""

    def __init__(self, effects, default_policy, lane):
        self._effects = effects
        self._default = default_policy
        self._lane = lane

    def send_text(self, text, write_history=None, history_policy=None, visible=True,
                  history_text=None, failure_history_text=None, delivery_metadata=None):
        policy = _policy(self._default, write_history, history_policy)
        if self._lane == "parallel":
            # Background slots cannot write history.
            policy = "transient"
        self._effects["deliveries"].append({
            "kind": "text", "text": str(text if text is not None else ""),
            "history_policy": policy, "visible": bool(visible),
            "history_text": None if history_text is None else str(history_text),
        })

    def progress(self, text, visible=True, delivery_metadata=None):
        self._effects["deliveries"].append({"kind": "progress", "text": str(text),
                                            "history_policy": "transient",
                                            "visible": bool(visible), "history_text": None})

    def notice(self, text, visible=True, delivery_metadata=None):
        self._effects["deliveries"].append({"kind": "notice", "text": str(text),
                                            "history_policy": "transient",
                                            "visible": bool(visible), "history_text": None})

    def _artifact(self, *_args, **_kwargs):
        raise SlotUnavailable("artifact deliveries (send_image/send_audio/send_video/send_file) "
                              "are not offered to slots on this demiurge host")

    send_image = send_audio = send_video = send_file = _artifact


class BootstrapClient:
    def __init__(self, effects, workspace):
        self._effects = effects
        self.workspace = Path(workspace) if workspace else None

    def add(self, text):
        text = str(text or "").strip()
        if text:
            self._effects["bootstrap"].append(text)


class InputClient(_Delivery):
    def __init__(self, effects, lane, raw_text, workspace, session_root, attachments=()):
        super().__init__(effects, "transient", lane)
        self.raw_text = raw_text
        self.attachments = tuple(attachments)
        self.workspace = Path(workspace) if workspace else None
        self.session_root = Path(session_root) if session_root else None

    def add(self, section, content, history_policy=None):
        if self._lane == "parallel":
            raise RuntimeError("a parallel input slot cannot modify the current prompt")
        if section not in ("system", "user"):
            raise ValueError("section must be 'system' or 'user'")
        default = "persist" if section == "user" else "transient"
        self._effects["context"].append({
            "section": section, "content": str(content if content is not None else ""),
            "history_policy": _policy(default, None, history_policy)})

    def add_context(self, content, role="system", write_history=None):
        default = "persist" if role == "user" else "transient"
        self.add(role, content, history_policy=_policy(default, write_history, None))


class OutputClient(_Delivery):
    def __init__(self, effects, lane, history_policy, response_text, metadata, workspace,
                 session_root):
        super().__init__(effects, history_policy, lane)
        self.response_text = response_text
        self.content = response_text
        self.metadata = dict(metadata or {})
        self.workspace = Path(workspace) if workspace else None
        self.session_root = Path(session_root) if session_root else None


def _json(value):
    """The value as the host will keep it; refuses what JSON cannot hold."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values sent to the host must be JSON (objects, arrays, text, finite numbers, "
                         f"booleans, None): {exc}") from None


class ScopedStateClient:
    """``ctx.state.core`` or ``ctx.state.session``: each call is answered by
    the host (``ask(scope, action, target, value)``), which checks the
    slot's grants; a refused grant raises ``CapabilityDenied``."""

    def __init__(self, ask, scope):
        self._ask = ask
        self._scope = scope

    def get(self, target, default=None):
        return self._ask(self._scope, "get", str(target), _json(default))

    def set(self, target, value):
        return self._ask(self._scope, "set", str(target), _json(value))

    def merge(self, target, value):
        if not isinstance(value, Mapping):
            raise TypeError("merge requires a mapping")
        return self._ask(self._scope, "merge", str(target), _json(dict(value)))

    def append(self, target, value):
        return self._ask(self._scope, "append", str(target), _json(value))

    def snapshot(self):
        return self._ask(self._scope, "snapshot", "", None)


class StateClient:
    """``ctx.state``: ``core`` (the Agent Core's) and ``session`` (this session's)."""

    def __init__(self, ask):
        self.core = ScopedStateClient(ask, "core")
        self.session = ScopedStateClient(ask, "session")


class SkillsClient:
    """``ctx.skills`` of input slots: ``activate(name)`` adds a skill of the
    core to this turn's system context (needs ``skill.activate:<name>`` or
    ``skill.activate``; an unknown name is ignored)."""

    def __init__(self, effects, capability, slot_path, lane="serial"):
        self._effects = effects
        self._capability = capability
        self._slot_path = slot_path
        self._lane = lane

    def activate(self, name):
        if self._lane == "parallel":
            raise RuntimeError("a parallel input slot cannot modify the current prompt")
        name = str(name or "").strip()
        if not name:
            raise ValueError("a skill name is required")
        if not (self._capability.can(f"skill.activate:{name}")
                or self._capability.can("skill.activate")):
            from demiurge.sdk import CapabilityDenied
            raise CapabilityDenied(f"capability 'skill.activate:{name}' is not granted to slot "
                                   f"{self._slot_path}")
        if name not in self._effects["skills"]:
            self._effects["skills"].append(name)


class ToolsClient:
    """``ctx.tools``: call a tool the core offers, as the model would (the
    slot needs ``tool.call:<name>``; the tool's capability and approval
    apply; the call shows as a tool card)."""

    def __init__(self, call, result_type):
        self._call = call
        self._result = result_type

    async def call(self, name, arguments=None):
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError("tool arguments must be a mapping")
        reply = self._call(str(name), _json(dict(arguments or {})))
        return self._result(content=str(reply.get("content") or ""),
                            data={"status": reply.get("status"), "call_id": reply.get("call_id")},
                            is_error=bool(reply.get("is_error")))


@dataclass(slots=True)
class HistoryMessageSummary:
    message_id: str
    role: str
    content: str
    turn_id: str | None = None
    created_at: str = ""
    step_id: str | None = None
    tool_call_id: str | None = None
    tool_calls: list = field(default_factory=list)
    visible: bool = True
    model_visible: bool = True
    tool_name: str | None = None
    is_error: bool = False


class HistoryClient:
    """``ctx.history``: the session's recent messages, as the host sent them."""

    def __init__(self, messages):
        self._messages = [m for m in (messages or []) if isinstance(m, dict)]

    def recent_messages(self, limit, roles=None):
        roles = set(roles or {"user", "assistant", "tool"}) & {"user", "assistant", "tool"}
        if not isinstance(limit, int) or limit <= 0:
            return []
        picked = [m for m in self._messages if m.get("role") in roles][-limit:]
        return [HistoryMessageSummary(
            message_id=str(m.get("message_id", "")), role=m.get("role", ""),
            content=str(m.get("content") or ""), turn_id=m.get("turn_id"),
            created_at=str(m.get("created_at", "")), tool_call_id=m.get("tool_call_id"),
            tool_calls=list(m.get("tool_calls") or []), tool_name=m.get("tool_name"),
        ) for m in picked]


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("result values must be finite numbers")
    if isinstance(value, dict):
        for v in value.values():
            _finite(v)
    if isinstance(value, (list, tuple)):
        for v in value:
            _finite(v)


class ResultClient:
    def __init__(self, effects, lane):
        self._effects = effects
        self._lane = lane

    @property
    def value(self):
        return self._effects.get("result")

    def set(self, value):
        if self._lane == "parallel":
            raise RuntimeError("a parallel output slot cannot modify ctx.result")
        _finite(value)
        current = self._effects.get("result")
        if isinstance(current, dict) and isinstance(value, dict):
            current.update(value)
        else:
            self._effects["result"] = value


@dataclass(slots=True)
class SlotContext:
    slot_id: str
    slot_path: str
    capability: Any
    session_id: str = ""
    core_id: str = ""
    core_revision: str = ""
    workspace: Any = None
    turn: Any = None
    bootstrap: Any = None
    input: Any = None
    output: Any = None
    history: Any = None
    result: Any = None
    # Input and output slots get a ``StateClient``; bootstrap slots do not.
    state: Any = field(default_factory=lambda: _Unavailable(
        "state", "is offered to input and output slots, not to bootstrap slots"))
    tools: Any = field(default_factory=lambda: _Unavailable(
        "tools", "is offered to input and output slots, not to bootstrap slots"))
    agents: Any = field(default_factory=lambda: _Unavailable("agents"))
    skills: Any = field(default_factory=lambda: _Unavailable(
        "skills", "is offered to input slots only"))


def new_effects():
    return {"bootstrap": [], "context": [], "deliveries": [], "result": None, "skills": []}


__all__ = [
    "BootstrapClient",
    "HistoryClient",
    "HistoryMessageSummary",
    "InputClient",
    "OutputClient",
    "ResultClient",
    "SlotContext",
    "ScopedStateClient",
    "SkillsClient",
    "SlotUnavailable",
    "StateClient",
    "ToolsClient",
    "new_effects",
]
