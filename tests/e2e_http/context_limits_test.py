"""Output limits against the context, end to end: a max_tokens / max_completion_tokens / max_new_tokens the
client gives beyond what the context leaves beside the prompt is a 400 naming the field (in its message and
`param`) and the numbers, on
/generate, both OpenAI endpoints and ZeroMQ, while the endpoints' defaults stay clamped; --context-length
above the model's max_position_embeddings stops the start unless --allow-long-context; /v1/models reports
the max_model_len in effect.
Usage: context_limits_test.py PATH/TO/moe-serve"""
import os
import sys
import unittest

import msgpack

import http_harness as hh

sys.path.insert(0, os.path.join(os.path.dirname(hh.HERE), "e2e"))
import serve_process as sp  # noqa: E402

CONTEXT = 64  # --context-length: prompt + output positions a request may use (max_model_len)
PROMPT = [9707, 11, 1879, 0]  # "Hello, world!": 4 tokens, so 60 may be generated


class ContextLimits(hh.ServerTest):
    routed_experts = False
    zmq_port = sp.free_port()
    extra_flags = ("--context-length", str(CONTEXT), "--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}")

    def expect_refusal(self, reply, field, asked):
        self.assertEqual(reply.status_code, 400, reply.text)
        error = reply.json()["error"]
        self.assertEqual(error["param"], field)  # like every other field's 400
        self.assertEqual(error["message"],
                         f"`{field}` is {asked}, but the prompt has {len(PROMPT)} tokens and the context holds "
                         f"{CONTEXT} (max_model_len): at most {CONTEXT - len(PROMPT)} can be generated")

    def test_models_report_the_max_model_len_in_effect(self):
        models = hh.requests.get(self.server.url + "/v1/models", timeout=30)
        self.assertEqual(models.json()["data"][0]["max_model_len"], CONTEXT)

    def test_generate(self):
        for asked in (CONTEXT - len(PROMPT) + 1, 100000):
            reply = self.server.post("/generate", {"input_ids": PROMPT, "sampling_params": {"max_new_tokens": asked}})
            self.expect_refusal(reply, "sampling_params.max_new_tokens", asked)
        reply = self.server.post("/generate", {"input_ids": [PROMPT, PROMPT],
                                               "sampling_params": [{"max_new_tokens": 2}, {"max_new_tokens": 61}]})
        self.expect_refusal(reply, "sampling_params[1].max_new_tokens", 61)
        fits = self.server.post("/generate", {"input_ids": PROMPT, "sampling_params": {
            "max_new_tokens": CONTEXT - len(PROMPT), "ignore_eos": True}})
        self.assertEqual(fits.status_code, 200, fits.text)
        self.assertEqual(fits.json()["meta_info"]["completion_tokens"], CONTEXT - len(PROMPT))

    def test_openai_endpoints(self):
        reply = self.server.post("/v1/completions", {"model": hh.MODEL_NAME, "prompt": PROMPT, "max_tokens": 100000})
        self.expect_refusal(reply, "max_tokens", 100000)
        chat = {"model": hh.MODEL_NAME, "messages": [{"role": "user", "content": "Hi"}], "ignore_eos": True}
        prompt_tokens = self.server.post("/v1/chat/completions", dict(chat, max_tokens=1)).json()["usage"][
            "prompt_tokens"]
        for field in ("max_tokens", "max_completion_tokens"):
            with self.subTest(field=field):
                reply = self.server.post("/v1/chat/completions", dict(chat, **{field: CONTEXT}))
                self.assertEqual(reply.status_code, 400, reply.text)
                self.assertEqual(reply.json()["error"]["param"], field)
                self.assertEqual(reply.json()["error"]["message"],
                                 f"`{field}` is {CONTEXT}, but the prompt has {prompt_tokens} tokens and the context "
                                 f"holds {CONTEXT} (max_model_len): at most {CONTEXT - prompt_tokens} can be generated")

    def test_defaults_stay_clamped(self):
        # Chat has no limit of its own: it runs to the end of the context.
        chat = {"model": hh.MODEL_NAME, "messages": [{"role": "user", "content": "Hi"}], "ignore_eos": True}
        reply = self.server.post("/v1/chat/completions", chat)
        self.assertEqual(reply.status_code, 200, reply.text)
        usage = reply.json()["usage"]
        self.assertEqual(usage["prompt_tokens"] + usage["completion_tokens"], CONTEXT + 1)
        self.assertEqual(reply.json()["choices"][0]["finish_reason"], "length")
        # /generate's default (128) is above the 60 the prompt leaves.
        reply = self.server.post("/generate", {"input_ids": PROMPT, "sampling_params": {"ignore_eos": True}})
        self.assertEqual(reply.status_code, 200, reply.text)

    def test_zeromq(self):
        sock = sp.connect(self.zmq_port)
        try:
            sock.send(msgpack.packb({"rid": "too-long", "input_ids": PROMPT, "sampling_params": {"max_new_tokens": 61}}))
            reply = sp.wait_for_reply(self, sock, 30)
            self.assertEqual(reply["error"]["code"], 400, reply)
            self.assertEqual(reply["error"]["message"],
                             "`sampling_params.max_new_tokens` is 61, but the prompt has 4 tokens and the context holds "
                             "64 (max_model_len): at most 60 can be generated")
            sock.send(msgpack.packb({"rid": "default", "input_ids": PROMPT, "sampling_params": {"ignore_eos": True}}))
            reply = sp.wait_for_reply(self, sock, 60)
            self.assertNotIn("error", reply, reply)
        finally:
            sock.close()


class LongContext(unittest.TestCase):
    def test_a_context_above_the_models_positions_needs_allow_long_context(self):
        with self.assertRaises(RuntimeError) as failure:
            hh.Server(routed_experts=False, extra_flags=("--context-length", "10000"))
        self.assertIn("--context-length 10000 is above the model's max_position_embeddings 8192", str(failure.exception))
        self.assertIn("--allow-long-context", str(failure.exception))
        server = hh.Server(routed_experts=False, extra_flags=("--context-length", "10000", "--allow-long-context",
                                                               "--max-total-tokens", "20000"))
        try:
            models = hh.requests.get(server.url + "/v1/models", timeout=30).json()
            self.assertEqual(models["data"][0]["max_model_len"], 10000)
        finally:
            code, log = server.stop()
        self.assertEqual(code, 0, log)
        self.assertIn("allowed by --allow-long-context", log)


if __name__ == "__main__":
    hh.run_tests()
