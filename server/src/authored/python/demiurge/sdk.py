"""Types authored tools import: ``from demiurge.sdk import ToolResult``.

Written for the demiurge Rust host: the same names and fields the Python
project's SDK offers to authored tools, so its tools run unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

JsonValue = Any


@dataclass(slots=True)
class ToolResult:
    """What a tool returns. ``content`` is what the model sees unless
    ``model_output`` overrides it; ``display_output`` overrides the tool card."""

    content: str
    data: JsonValue | None = None
    is_error: bool = False
    terminate: bool = False
    model_output: str | None = None
    display_output: str | None = None


@dataclass(slots=True)
class AgentInput:
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TurnContext:
    session_id: str
    turn_id: str
    core_id: str
    core_revision: str
    user_input: AgentInput
    metadata: dict[str, Any] = field(default_factory=dict)


class CapabilityDenied(PermissionError):
    """Raised by ``ctx.capability.require`` when the host refuses."""


class CapabilityClient(Protocol):
    def can(self, capability: str, *, slot_path: str | None = None) -> bool: ...

    def require(self, capability: str, *, slot_path: str | None = None) -> None: ...


@dataclass(slots=True)
class ToolContext:
    turn: TurnContext
    slot_id: str
    slot_path: str
    capability: CapabilityClient
    output: Any = None
    workspace: Any = None


__all__ = [
    "AgentInput",
    "CapabilityClient",
    "CapabilityDenied",
    "JsonValue",
    "Mapping",
    "ToolContext",
    "ToolResult",
    "TurnContext",
]
