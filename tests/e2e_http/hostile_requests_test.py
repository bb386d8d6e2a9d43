"""No one client can crash the server: JSON nested 20,000 deep (in `tools`, `chat_template_kwargs`, a chat turn's tool
call over HTTP, a turn's `extra_fields` over ZeroMQ) is a 400 naming the field and the limit of 128 levels, where it
used to overflow the tokenizer thread's stack.
Usage: hostile_requests_test.py PATH/TO/moe-serve"""
import json
import os
import sys
import time

import msgpack
import requests

import http_harness as hh

sys.path.insert(0, os.path.join(os.path.dirname(hh.HERE), "e2e"))
import serve_process as sp  # noqa: E402

DEPTH = 20000          # the depth that crashed the server
LIMIT_TEXT = "deeper than 128 levels"


def nested_object(levels):
    """The JSON text of {"a": {"a": ... 1}} nesting `levels` objects (6 bytes a level)."""
    return '{"a":' * levels + "1" + "}" * levels


class HostileRequests(hh.ServerTest):
    zmq_port = sp.free_port()
    extra_flags = ("--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}")

    def small_request_seconds(self):
        """The time a one-token /generate takes, which must stay short whatever another client sends."""
        start = time.monotonic()
        reply = self.server.post("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 1}}, timeout=30)
        self.assertEqual(reply.status_code, 200, reply.text)
        return time.monotonic() - start

    def post_raw(self, path, data, timeout=30):
        return requests.post(self.server.url + path, data=data, headers={"Content-Type": "application/json"},
                             timeout=timeout)

    def expect_refused(self, reply, *needles):
        self.assertEqual(reply.status_code, 400, reply.text[:2000])
        message = reply.json()["error"]["message"]
        for needle in needles:
            self.assertIn(needle, message)
        return message

    def test_deep_json_over_http_is_a_400_naming_the_field(self):
        deep = nested_object(DEPTH)
        chat = {"model": hh.MODEL_NAME, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
        tools = dict(chat, tool_choice="none", tools=[{"type": "function", "function": {"name": "f", "parameters": "@"}}])
        kwargs = dict(chat, chat_template_kwargs={"x": "@"})
        turn = dict(chat, messages=[{"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "@"}}]}])
        for name, body, field in (("tools", tools, "tools[0].function.parameters"),
                                  ("chat_template_kwargs", kwargs, "chat_template_kwargs.x"),
                                  ("messages[0].tool_calls", turn, "messages[0].tool_calls[0]")):
            with self.subTest(field=name):
                text = json.dumps(body).replace('"@"', deep)
                self.expect_refused(self.post_raw("/v1/chat/completions", text), field, LIMIT_TEXT)
                self.small_request_seconds()
        # The arguments of a tool call as JSON text (OpenAI's form), parsed by the server itself.
        body = dict(turn)
        body["messages"][0]["tool_calls"][0]["function"]["arguments"] = deep
        self.expect_refused(self.server.post("/v1/chat/completions", body),
                            "messages[0].tool_calls[0].function.arguments", LIMIT_TEXT)
        self.small_request_seconds()

    def test_deep_extra_fields_over_zeromq_is_an_error_reply(self):
        sock = sp.connect(self.zmq_port)
        try:
            sock.send(msgpack.packb({"rid": "deep", "messages": [
                {"role": "user", "content": "hi", "extra_fields": nested_object(DEPTH)}],
                "sampling_params": {"max_new_tokens": 1}}, use_bin_type=True))
            reply = sp.wait_for_reply(self, sock, 30)
            self.assertIn("error", reply, reply)
            self.assertEqual(reply["error"]["code"], 400, reply)
            self.assertIn("messages[0].extra_fields.a.a", reply["error"]["message"])
            self.assertIn(LIMIT_TEXT, reply["error"]["message"])
            sock.send(msgpack.packb({"rid": "after", "text": "hi", "sampling_params": {"max_new_tokens": 1}},
                                    use_bin_type=True))
            reply = sp.wait_for_reply(self, sock, 30)
            self.assertNotIn("error", reply, reply)
        finally:
            sock.close()
        self.small_request_seconds()


if __name__ == "__main__":
    hh.run_tests()
