"""A real chat-completions server on 127.0.0.1 whose "model" is a Python function of the messages.

It answers both plain and streamed (``"stream": true``, server-sent events) requests, as an
OpenAI-compatible server does; verifiers' chat harness streams. ``reply(messages) -> str`` gives the
assistant's text.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MODEL = "scripted-oracle"


class ModelServer:
    def __init__(self, reply: Callable[[list[dict[str, Any]]], str]) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, request: dict[str, Any]) -> str:
        with self._lock:
            self.requests.append(request)
            return self.reply(request["messages"])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404)
                    return
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                content = server._answer(request)
                base = {"id": f"chatcmpl-{len(server.requests)}", "created": 0, "model": request.get("model", MODEL)}
                usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                if request.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    chunks = [
                        {"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": None},
                        {"index": 0, "delta": {}, "finish_reason": "stop"},
                    ]
                    for choice in chunks:
                        body = {**base, "object": "chat.completion.chunk", "choices": [choice]}
                        self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
                    final = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
                    self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
                    return
                body = json.dumps({**base, "object": "chat.completion", "usage": usage, "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

        return Handler
