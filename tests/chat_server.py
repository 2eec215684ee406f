"""A real HTTP server on 127.0.0.1 that speaks the chat-completions protocol, for every test that
needs a served model (the agent and CLI tests, the trainer adapters' tests).

Replies are scripted: a queue of ``(status, body)`` pairs, or a ``responder(request) -> body``
used when the queue is empty (``text_responder`` makes one from a function of the messages that
returns the assistant's text). It checks the path, the API key and the model as a server would,
and answers a request with ``"stream": true`` in server-sent events (the chunks of the reply, a
last chunk with the usage, then ``[DONE]``), as OpenAI-compatible servers do; errors are plain
JSON either way. ``stall()`` makes the next request hang without an answer (until the server stops),
as a server stuck in generation does.

``llama=True`` makes it behave as llama-cpp-python's server does (checked against a real one): a
message whose ``content`` is ``null`` without tool calls, or an assistant message with ``null``
content, is answered with HTTP 500 and a pydantic validation error; with ``drop_tools=True`` (its
default chat format) ``tools`` are accepted and silently dropped before the model sees the request.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MODEL = "toy-model"
API_KEY = "good-key"


def completion(content: str | None = None, tool_calls: list[tuple[str, Any]] | None = None) -> dict[str, Any]:
    """A chat.completion body; ``tool_calls`` are (name, arguments) with arguments a dict or raw text."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(tool_calls)]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "error", "code": None}}


def llama_validation_error(index: int) -> dict[str, Any]:
    """The body llama-cpp-python's server sends (with HTTP 500) for a message with null content."""
    return {"error": {"message": f"1 validation error for ChatCompletionRequestAssistantMessage\nmessages.{index}."
                                 "content\n  Input should be a valid string [type=string_type, input_value=None, "
                                 "input_type=NoneType]",
                      "type": "internal_server_error", "param": None, "code": None}}


def text_responder(reply: Callable[[list[dict[str, Any]]], str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A responder whose "model" is ``reply(messages) -> the assistant's text``."""
    return lambda request: completion(reply(request["messages"]))


def chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat.completion body as the chunks a streaming server sends: the message as one delta
    (tool calls numbered by ``index``), the finish reason, then the usage with no choices."""
    base = {key: body[key] for key in ("id", "created", "model") if key in body}
    base["object"] = "chat.completion.chunk"
    found = []
    for choice in body["choices"]:
        message = choice["message"]
        delta = {"role": message.get("role", "assistant"), "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        found.append({**base, "choices": [{"index": choice["index"], "delta": delta, "finish_reason": None}]})
        found.append({**base, "choices": [{"index": choice["index"], "delta": {},
                                           "finish_reason": choice["finish_reason"]}]})
    found.append({**base, "choices": [], "usage": body.get("usage")})
    return found


def counter_solver(request: dict[str, Any]) -> dict[str, Any]:
    """A 'model' that solves the toy counter task from the conversation: deterministic, so sweeps
    through it are comparable across executors."""
    text = "\n".join(str(m.get("content") or "") for m in request["messages"])
    task = re.search(r"Reach (\d+)", text)
    if task is None and request.get("tools"):  # asked to call a tool outside a task: call the first one
        return completion(tool_calls=[(request["tools"][0]["function"]["name"], {})])
    target = int(task.group(1))
    values = re.findall(r"Counter: (\d+)", text)
    value = int(values[-1]) if values else 0
    return completion(tool_calls=[("add", {"n": max(1, min(3, target - value))})])


def blind_counter_solver(request: dict[str, Any]) -> dict[str, Any]:
    """A 'model' that calls tools only where it can see them: native tools, or tools written into
    the system prompt (text mode, answered in text). Without either it chats, as a small model does."""
    if request.get("tools"):
        return counter_solver(request)
    if "Tools:" in str(request["messages"][0].get("content") or ""):
        call = counter_solver(request)["choices"][0]["message"]["tool_calls"][0]["function"]
        return completion(f'<tool_call>{{"name": "add", "arguments": {call["arguments"]}}}</tool_call>')
    return completion("Hello! How can I help you today?")


class ChatServer:
    def __init__(self, responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None, *, llama: bool = False,
                 drop_tools: bool = False) -> None:
        self.llama = llama
        self.drop_tools = drop_tools
        self.replies: deque[tuple[int, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.responder = responder
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stopped.set()  # stalled requests end (unanswered)
        self._server.shutdown()
        self._server.server_close()

    def reply(self, body: Any, status: int = 200) -> "ChatServer":
        self.replies.append((status, body))
        return self

    def stall(self) -> "ChatServer":
        """The next request gets no answer at all (the connection stays open)."""
        self.replies.append((0, None))
        return self

    def _next(self, request: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(request)
        if self.llama:
            for index, message in enumerate(request.get("messages", [])):
                if message.get("content") is None and message.get("role") in ("assistant", "user", "system", "tool"):
                    return 500, llama_validation_error(index)
            if self.drop_tools:
                request = {key: value for key, value in request.items() if key not in ("tools", "tool_choice")}
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return 200, self.responder(request)
        return 500, error("the test scripted no reply for this request")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/chat/completions":
                    return self._send(404, error(f"no route {self.path}"))
                if self.headers.get("Authorization") != f"Bearer {API_KEY}":
                    return self._send(401, error("Incorrect API key provided"))
                request = json.loads(body)
                if request.get("model") != MODEL:
                    return self._send(404, error(f"The model `{request.get('model')}` does not exist."))
                status, reply = server._next(request)
                if status == 0:  # stalled: hold the connection open, answer nothing
                    server._stopped.wait()
                    return None
                if request.get("stream") and status == 200 and isinstance(reply, dict) and "choices" in reply:
                    return self._stream(chunks(reply))
                self._send(status, reply)

            def _stream(self, events: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                data = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
                try:
                    self.wfile.write(data.encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, status: int, body: Any) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client is gone (killed, interrupted)
                    pass

        return Handler
