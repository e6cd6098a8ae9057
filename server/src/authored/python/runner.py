"""demiurge authored-tool runner: one confined process, many calls.

Speaks newline-delimited JSON with the host: requests on stdin, replies on
the process's original stdout (kept as a private descriptor; fd 1 is pointed
at stderr so stray writes cannot corrupt the protocol). One call at a time:

  host -> {"op": "call", "id", "tool": {...}, "turn": {...}, "workspace", "args"}
  runner -> {"op": "capability", "id", "name", "slot_path"}   (host answers
            {"op": "capability", "id", "allowed"}), {"op": "output", "id",
            "stream", "text"}, then {"op": "result", "id", "value"} or
            {"op": "error", "id", "kind", "type", "message"}.

  host -> {"op": "slot", "id", "slot": {...}, "turn": {...}, "workspace",
           "input": {"raw_text"}, "output": {"response_text"}, "history": [...]}
  runner -> the same capability/output messages, {"op": "state", "id",
            "scope", "action", "target", "value"} for ``ctx.state`` and
            {"op": "tool", "id", "name", "arguments"} for ``ctx.tools``
            (host answers {"op": "host", "id", "ok", "value"} or
            {"op": "host", "id", "ok": false, "kind", "message"}), then {"op": "result",
            "id", "value": {"bootstrap", "context", "deliveries", "result"}}
            (what the slot asked for, see ``demiurge.slots``) or an error.

  During a call or a slot, ``urllib.request`` goes through the host:
  runner -> {"op": "http", "id", "method", "url", "headers": [[k, v]],
            "body" (base64) , "timeout"}; host answers {"op": "host", "id",
            "ok", "value": {"status", "reason", "headers", "body"}} or a
            refusal (raised as ``urllib.error.URLError``).
"""

import asyncio
import base64
import http.client
import importlib
import importlib.util
import inspect
import io
import json
import os
import sys
import threading
import types
import urllib.error
import urllib.request
import urllib.response

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr
_input = sys.stdin

from demiurge.sdk import AgentInput, CapabilityDenied, ToolContext, ToolResult, TurnContext  # noqa: E402
from demiurge import slots as _slots  # noqa: E402


_out_lock = threading.Lock()


def _send(message):
    line = json.dumps(message, ensure_ascii=False, default=str) + "\n"
    with _out_lock:
        _proto.write(line)
        _proto.flush()


def _receive():
    line = _input.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


class _Capability:
    def __init__(self, call_id, slot_path):
        self._id = call_id
        self._slot_path = slot_path

    def can(self, capability, *, slot_path=None):
        with _wire:
            _send({"op": "capability", "id": self._id, "name": str(capability),
                   "slot_path": slot_path or self._slot_path})
            reply = _receive()
        return bool(reply.get("allowed"))

    def require(self, capability, *, slot_path=None):
        if not self.can(capability, slot_path=slot_path):
            raise CapabilityDenied(f"capability {capability!r} is not granted to this tool")


class _Host:
    """Carries a slot's ``ctx.state`` and ``ctx.tools`` requests to the host;
    a refusal raises (``CapabilityDenied``, ``ValueError``, ``RuntimeError``)."""

    def __init__(self, call_id):
        self._id = call_id

    def _ask(self, op, **fields):
        with _wire:
            _send({"op": op, "id": self._id, **fields})
            reply = _receive()
        if reply.get("ok"):
            return reply.get("value")
        kind, message = reply.get("kind"), str(reply.get("message") or "refused")
        if kind == "capability":
            raise CapabilityDenied(message)
        if kind == "invalid":
            raise ValueError(message)
        raise RuntimeError(message)

    def state(self, scope, action, target, value):
        return self._ask("state", scope=scope, action=action, target=target, value=value)

    def tool(self, name, arguments):
        return self._ask("tool", name=name, arguments=arguments)


_current = {"id": None}
_wire = threading.Lock()


class _Bridge:
    """urllib's HTTP(S) made by the host, through its URL policy."""

    def _through_host(self, req):
        call_id = _current["id"]
        if call_id is None:
            raise urllib.error.URLError("HTTP is only available during a call")
        body = req.data
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = b"".join(part if isinstance(part, bytes) else str(part).encode() for part in body)
        timeout = req.timeout if isinstance(req.timeout, (int, float)) else None
        with _wire:
            _send({"op": "http", "id": call_id, "method": req.get_method(), "url": req.full_url,
                   "headers": [[k, v] for k, v in req.header_items()],
                   "body": base64.b64encode(body).decode() if body is not None else None,
                   "timeout": timeout})
            reply = _receive()
        if not reply.get("ok"):
            raise urllib.error.URLError(str(reply.get("message") or "refused by the host"))
        value = reply.get("value") or {}
        headers = http.client.HTTPMessage()
        for key, val in value.get("headers") or []:
            headers[key] = val
        resp = urllib.response.addinfourl(
            io.BytesIO(base64.b64decode(value.get("body") or "")), headers, req.full_url,
            int(value.get("status") or 0))
        resp.msg = value.get("reason") or ""
        return resp


class _HostHTTPHandler(_Bridge, urllib.request.HTTPHandler):
    def http_open(self, req):
        return self._through_host(req)


class _HostHTTPSHandler(_Bridge, urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self._through_host(req)


urllib.request.install_opener(urllib.request.build_opener(_HostHTTPHandler, _HostHTTPSHandler))


class _Output:
    """``ctx.output``: text streamed to the running turn as tool output."""

    def __init__(self, call_id, stream="stdout"):
        self._id = call_id
        self._stream = stream

    def write(self, text):
        text = str(text)
        if text:
            _send({"op": "output", "id": self._id, "stream": self._stream, "text": text})
        return len(text)

    def send(self, content=None, **_ignored):
        if content is not None:
            self.write(content if str(content).endswith("\n") else f"{content}\n")
        return None

    def __call__(self, content=None, **kwargs):
        return self.send(content, **kwargs)

    def flush(self):
        return None

    def isatty(self):
        return False


_packages = {}


def _load(tool):
    package = _packages.get(tool["dir"])
    if package is None:
        package = "_demiurge_tool_%d" % len(_packages)
        module = types.ModuleType(package)
        # The tool folder, then the core's shared `agent/lib` (as the
        # Python project does), so package tools' relative imports resolve.
        module.__path__ = [tool["dir"]] + ([tool["lib"]] if tool.get("lib") else [])
        module.__package__ = package
        sys.modules[package] = module
        _packages[tool["dir"]] = package
    return importlib.import_module(package + "." + tool["module"])


def _plain(value):
    if isinstance(value, ToolResult):
        return {"content": value.content, "data": value.data, "is_error": value.is_error,
                "model_output": value.model_output, "display_output": value.display_output}
    if isinstance(value, dict):
        return value
    if value is None:
        return {"content": ""}
    return {"content": str(value)}


def _call(message):
    call_id = message["id"]
    tool = message["tool"]
    turn = message.get("turn") or {}
    ctx = ToolContext(
        turn=TurnContext(
            session_id=turn.get("session_id", ""),
            turn_id=turn.get("turn_id", ""),
            core_id=turn.get("core_id", ""),
            core_revision=turn.get("core_revision", ""),
            user_input=AgentInput(content=turn.get("user_input", "")),
            metadata={},
        ),
        slot_id=tool["name"],
        slot_path=tool["slot_path"],
        capability=_Capability(call_id, tool["slot_path"]),
        output=_Output(call_id),
        workspace=message.get("workspace"),
    )
    saved = sys.stdout
    sys.stdout = _Output(call_id)
    _current["id"] = call_id
    try:
        module = _load(tool)
        function = getattr(module, tool["function"], None)
        if not callable(function):
            _send({"op": "error", "id": call_id, "kind": "entrypoint", "type": "AttributeError",
                   "message": f"{tool['module']}:{tool['function']} is not a callable"})
            return
        value = function(ctx, message.get("args") or {})
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
        _send({"op": "result", "id": call_id, "value": _plain(value)})
    except CapabilityDenied as exc:
        _send({"op": "error", "id": call_id, "kind": "capability", "type": type(exc).__name__,
               "message": str(exc)})
    except SystemExit as exc:
        _send({"op": "error", "id": call_id, "kind": "raised", "type": "SystemExit",
               "message": f"the tool called exit({exc.code!r})"})
    except BaseException as exc:  # noqa: BLE001 - every failure is the tool's result
        _send({"op": "error", "id": call_id, "kind": "raised", "type": type(exc).__name__,
               "message": str(exc)})
    finally:
        sys.stdout = saved
        _current["id"] = None


def _slot(message):
    call_id = message["id"]
    slot = message["slot"]
    turn = message.get("turn") or {}
    phase = slot.get("phase")
    lane = slot.get("lane", "serial")
    workspace = message.get("workspace")
    session_root = message.get("session_root")
    effects = _slots.new_effects()
    ctx = _slots.SlotContext(
        slot_id=slot["name"], slot_path=slot["slot_path"],
        capability=_Capability(call_id, slot["slot_path"]),
        session_id=turn.get("session_id", ""), core_id=turn.get("core_id", ""),
        core_revision=turn.get("core_revision", ""), workspace=workspace,
    )
    if phase == "bootstrap":
        ctx.bootstrap = _slots.BootstrapClient(effects, workspace)
    else:
        ctx.turn = TurnContext(
            session_id=turn.get("session_id", ""), turn_id=turn.get("turn_id", ""),
            core_id=turn.get("core_id", ""), core_revision=turn.get("core_revision", ""),
            user_input=AgentInput(content=turn.get("user_input", "")), metadata={},
        )
        ctx.history = _slots.HistoryClient(message.get("history"))
        host = _Host(call_id)
        ctx.state = _slots.StateClient(host.state)
        ctx.tools = _slots.ToolsClient(host.tool, ToolResult)
        if phase == "input":
            ctx.input = _slots.InputClient(effects, lane, (message.get("input") or {}).get(
                "raw_text", ""), workspace, session_root)
            ctx.skills = _slots.SkillsClient(effects, ctx.capability, slot["slot_path"], lane)
        else:
            out = message.get("output") or {}
            ctx.output = _slots.OutputClient(effects, lane, slot.get("history_policy", "persist"),
                                             out.get("response_text", ""), out.get("metadata"),
                                             workspace, session_root)
            ctx.result = _slots.ResultClient(effects, lane)
    saved = sys.stdout
    sys.stdout = _Output(call_id)
    _current["id"] = call_id
    try:
        module = _load(slot)
        function = getattr(module, slot["function"], None)
        if not callable(function):
            _send({"op": "error", "id": call_id, "kind": "entrypoint", "type": "AttributeError",
                   "message": f"{slot['module']}:{slot['function']} is not a callable"})
            return
        value = function(ctx)
        if inspect.isawaitable(value):
            asyncio.run(_awaited(value))
        _send({"op": "result", "id": call_id, "value": effects})
    except CapabilityDenied as exc:
        _send({"op": "error", "id": call_id, "kind": "capability", "type": type(exc).__name__,
               "message": str(exc)})
    except SystemExit as exc:
        _send({"op": "error", "id": call_id, "kind": "raised", "type": "SystemExit",
               "message": f"the slot called exit({exc.code!r})"})
    except BaseException as exc:  # noqa: BLE001 - every failure is the slot's result
        _send({"op": "error", "id": call_id, "kind": "raised", "type": type(exc).__name__,
               "message": str(exc)})
    finally:
        sys.stdout = saved
        _current["id"] = None


async def _awaited(value):
    return await value


def main():
    _send({"op": "ready", "pid": os.getpid()})
    while True:
        message = _receive()
        if message.get("op") == "call":
            _call(message)
        elif message.get("op") == "slot":
            _slot(message)


if __name__ == "__main__":
    main()
