#!/usr/bin/env python3
"""A scripted model endpoint on 127.0.0.1 for `make test-runners`: it answers Claude Code and
OpenCode (the Anthropic Messages API, streamed as SSE), the Codex CLI (the OpenAI Responses API,
streamed as SSE) and Gemini CLI (the Gemini API's generateContent, plain or streamed as SSE)
from a script, and logs every request it receives. Python 3 standard library only.

    model_server.py --script SCRIPT.json --log REQUESTS.jsonl --port-file PORT

SCRIPT.json: {"steps": [STEP, ...], "final": "text"}. STEP is {"shell": "command"} (Claude's
Bash tool, OpenCode's bash, Codex's shell tool, Gemini CLI's run_shell_command, whichever the
request offers) or {"tool": NAME, "input": {...}}
(any tool by name, e.g. Claude's ExitWorktree). The server is stateless: the step it plays is
the number of tool results already in the conversation it is sent, so a retried request gets
the same answer. When every step has its result it answers with the final text. A request
that offers no tools (Claude's title and topic side requests) gets a short plain text.
"""
import argparse
import os
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
ARGS = None
SCRIPT = None


def log(entry):
    with LOCK:
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def tool_names_anthropic(body):
    return [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]


def tool_names_openai(body):
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            names.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return names


def count_anthropic_results(body):
    n = 0
    for m in body.get("messages") or []:
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, list):
            n += sum(1 for c in content if isinstance(c, dict) and c.get("type") == "tool_result")
    return n


def count_openai_results(body):
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(
        1
        for i in items
        if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
    )


def tool_names_gemini(body):
    names = []
    for t in body.get("tools") or []:
        for f in (t.get("functionDeclarations") or []) if isinstance(t, dict) else []:
            if isinstance(f, dict):
                names.append(f.get("name"))
    return names


def count_gemini_results(body):
    n = 0
    for c in body.get("contents") or []:
        if isinstance(c, dict) and c.get("role") == "user":
            n += sum(1 for p in c.get("parts") or [] if isinstance(p, dict) and "functionResponse" in p)
    return n


def from_schema(schema):
    """A value of the shape a JSON schema asks for (Gemini CLI's side requests, e.g. its model
    router's classifier, ask for JSON and retry until they get it)."""
    kind = str((schema or {}).get("type") or "object").lower()
    if kind == "object":
        return {k: from_schema(v) for k, v in ((schema or {}).get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    enum = (schema or {}).get("enum")
    return enum[0] if enum else "scripted"


def step_for(n):
    steps = SCRIPT.get("steps") or []
    return steps[n] if n < len(steps) else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: everything goes to the JSONL log
        pass

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return raw, json.loads(raw) if raw else None
        except ValueError:
            return raw, None

    def _send(self, code, ctype, payload):
        data = payload.encode() if isinstance(payload, str) else payload
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events):
        """events: [(event name or None, dict)]"""
        out = []
        for name, data in events:
            if name:
                out.append(f"event: {name}\n")
            out.append(f"data: {json.dumps(data)}\n\n")
        self._send(200, "text/event-stream", "".join(out))

    def do_HEAD(self):
        log({"method": "HEAD", "path": self.path, "headers": dict(self.headers)})
        self._send(200, "text/plain", "")

    def do_GET(self):
        log({"method": "GET", "path": self.path, "headers": dict(self.headers)})
        if self.path.split("?")[0].endswith("/models"):
            self._send(200, "application/json", json.dumps({"object": "list", "data": [], "models": []}))
            return
        self._send(404, "application/json", json.dumps({"error": {"message": "not scripted"}}))

    def do_POST(self):
        raw, body = self._body()
        path = self.path.split("?")[0]
        entry = {"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body}
        if body is None:
            entry["raw"] = raw.decode("utf-8", "replace")
        if path.endswith("/messages/count_tokens"):
            log(entry)
            self._send(200, "application/json", json.dumps({"input_tokens": 10}))
        elif path.endswith("/messages"):
            entry["answer"] = self.anthropic(body or {})
            log(entry)
        elif path.endswith("/responses"):
            entry["answer"] = self.openai(body or {})
            log(entry)
        elif path.endswith(":countTokens"):
            log(entry)
            self._send(200, "application/json", json.dumps({"totalTokens": 10}))
        elif path.endswith(":generateContent") or path.endswith(":streamGenerateContent"):
            entry["answer"] = self.gemini(body or {}, path.endswith(":streamGenerateContent"))
            log(entry)
        else:
            log(entry)
            self._send(404, "application/json", json.dumps({"error": {"message": "not scripted"}}))

    # --- Anthropic Messages API -------------------------------------------------------------

    def anthropic(self, body):
        tools = tool_names_anthropic(body)
        n = count_anthropic_results(body)
        step = step_for(n) if tools else None
        block = None
        shell = next((t for t in ("Bash", "bash") if t in tools), None)  # Claude Code's, OpenCode's
        if step is not None and "shell" in step and shell:
            block = {"name": shell, "input": {"command": step["shell"], "description": "scripted step"}}
        elif step is not None and step.get("tool"):
            # Not only the listed tools: Claude's deferred tools (ExitWorktree) are named in a
            # system message and loaded through ToolSearch.
            block = {"name": step["tool"], "input": step.get("input") or {}}
        if block is not None:
            block.update({"type": "tool_use", "id": f"toolu_kardwt_{n:04d}"})
            answer = {"tool_use": block["name"], "input": block["input"], "step": n}
            stop = "tool_use"
        else:
            text = (SCRIPT.get("final") or "done") if tools else "Scripted side answer"
            block = {"type": "text", "text": text}
            answer = {"text": text, "step": n, "tools": bool(tools)}
            stop = "end_turn"
        model = body.get("model") or "claude-scripted"
        message = {
            "id": f"msg_kardwt_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            self._send(200, "application/json", json.dumps(message))
            return answer
        start = dict(message, content=[], stop_reason=None, usage={"input_tokens": 10, "output_tokens": 1})
        events = [("message_start", {"type": "message_start", "message": start})]
        if block["type"] == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                   "content_block": dict(block, input={})}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(block["input"])}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": 5}}))
        events.append(("message_stop", {"type": "message_stop"}))
        self._sse(events)
        return answer

    # --- OpenAI Responses API ---------------------------------------------------------------

    def openai(self, body):
        tools = tool_names_openai(body)
        n = count_openai_results(body)
        step = step_for(n) if tools else None
        rid = f"resp_kardwt_{n:04d}"
        item = None
        if step is not None and "shell" in step:
            cmd = step["shell"]
            if "exec_command" in tools:
                item = {"name": "exec_command", "arguments": json.dumps({"cmd": cmd})}
            elif "shell_command" in tools:
                item = {"name": "shell_command", "arguments": json.dumps({"command": cmd})}
            elif "shell" in tools:
                item = {"name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", cmd]})}
        elif step is not None and step.get("tool"):
            item = {"name": step["tool"], "arguments": json.dumps(step.get("input") or {})}
        if item is not None:
            item.update({"type": "function_call", "id": f"fc_kardwt_{n:04d}", "call_id": f"call_kardwt_{n:04d}",
                         "status": "completed"})
            answer = {"function_call": item["name"], "arguments": item["arguments"], "step": n}
        else:
            text = (SCRIPT.get("final") or "done") if tools else "Scripted side answer"
            item = {"type": "message", "id": f"msg_kardwt_{n:04d}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
            answer = {"text": text, "step": n, "tools": bool(tools)}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        response = {"id": rid, "object": "response", "status": "in_progress", "model": body.get("model"),
                    "output": []}
        events = [
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": response}),
            ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                            "output_index": 0, "item": item}),
        ]
        if item["type"] == "message":
            events.append(("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 2,
                                                          "item_id": item["id"], "output_index": 0,
                                                          "content_index": 0, "delta": item["content"][0]["text"]}))
        events.append(("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3,
                                                     "output_index": 0, "item": item}))
        events.append(("response.completed", {"type": "response.completed", "sequence_number": 4,
                                              "response": dict(response, status="completed", output=[item],
                                                               usage=usage)}))
        self._sse(events)
        return answer


    # --- Gemini API (generateContent) ----------------------------------------------------------

    def gemini(self, body, stream):
        tools = tool_names_gemini(body)
        n = count_gemini_results(body)
        step = step_for(n) if tools else None
        part = None
        if step is not None and "shell" in step and "run_shell_command" in tools:
            part = {"functionCall": {"name": "run_shell_command",
                                     "args": {"command": step["shell"], "description": "scripted step"}}}
        elif step is not None and step.get("tool"):
            part = {"functionCall": {"name": step["tool"], "args": step.get("input") or {}}}
        if part is not None:
            answer = {"function_call": part["functionCall"]["name"], "args": part["functionCall"]["args"], "step": n}
        else:
            text = (SCRIPT.get("final") or "done") if tools else "Scripted side answer"
            config = body.get("generationConfig") or {}
            if not tools and config.get("responseMimeType") == "application/json":
                text = json.dumps(from_schema(config.get("responseJsonSchema") or config.get("responseSchema")))
            part = {"text": text}
            answer = {"text": text, "step": n, "tools": bool(tools)}
        response = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-scripted",
        }
        if stream:
            self._sse([(None, response)])
        else:
            self._send(200, "application/json", json.dumps(response))
        return answer


def main():
    global ARGS, SCRIPT
    p = argparse.ArgumentParser()
    p.add_argument("--script", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--port-file", required=True)
    ARGS = p.parse_args()
    with open(ARGS.script, encoding="utf-8") as f:
        SCRIPT = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, ARGS.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
