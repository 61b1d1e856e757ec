#!/usr/bin/env python3
"""A scripted stand-in for an OpenAI-compatible chat-completions service, on loopback, for
demonstrating `regime predict` and `regime predict eval` without a hosted LLM (docs/predict.md).
It is not a language model: it answers by fixed rules read off the prompt, so that what the prompt
carries shows in the score:
  - one-shot prompt ("drew N W"): N W, the example's power;
  - spec prompt ("default power limit N W"): 0.9 x N W;
  - zero-shot prompt: 200 W, whatever the GPU.
Answers alternate between the JSON the prompt asks for and a sentence in prose.

Usage: scripts/scripted_llm_server.py [PORT_FILE]   (serves until killed; writes its port)
"""
import http.server
import json
import re
import sys

count = 0


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        if m := re.search(r"drew ([0-9.]+) W", prompt):
            watts = float(m.group(1))
        elif m := re.search(r"default power limit ([0-9.]+) W", prompt):
            watts = 0.9 * float(m.group(1))
        else:
            watts = 200.0
        count += 1
        content = (json.dumps({"avg_power_W": round(watts, 1), "regime": "cap-bound"})
                   if count % 2 else f"I would expect roughly {watts:.0f} W on average.")
        out = json.dumps({"object": "chat.completion", "model": body.get("model"),
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": content}}]})
        data = out.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):  # quiet: the prompts are long
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(str(port))
    print(port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
