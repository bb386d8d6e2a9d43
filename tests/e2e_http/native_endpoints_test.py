"""SGLang's native endpoints on a real moe-serve, called with Python requests as SGLang clients call them:
/flush_cache (a prompt served from the prefix cache is computed again after it), /abort_request (a
streaming request ends with finish reason abort, its client still answered), /health_generate,
/tokenize and /detokenize (the ids /generate gives the same text, and back), /get_model_info (the
MoE shape the routing replies have), /get_server_info (flags and derived sizes) and /v1/models'
max_model_len.
Usage: native_endpoints_test.py PATH/TO/moe-serve"""
import time

import requests

import http_harness as hh


class NativeEndpoints(hh.ServerTest):
    extra_flags = ("--max-total-tokens", "4096", "--weight-version", "w0")

    def get(self, path):
        reply = requests.get(self.server.url + path, timeout=60)
        self.assertEqual(reply.status_code, 200, reply.text)
        return reply

    def test_flush_cache_empties_the_prefix_cache(self):
        body = hh.golden_generate(self.golden["cases"][4], 4)
        self.server.post("/generate", body).raise_for_status()
        self.assertGreater(self.server.post("/generate", body).json()["meta_info"]["cached_tokens"], 0)
        flushed = self.server.post("/flush_cache", None)
        self.assertEqual(flushed.status_code, 200)
        self.assertTrue(flushed.text.startswith("Cache flushed"), flushed.text)
        again = self.server.post("/generate", body).json()
        self.assertEqual(again["meta_info"]["cached_tokens"], 0)
        self.assertEqual(again["output_ids"], self.golden["cases"][4]["output_ids"][:4])

    def test_abort_request_ends_a_streaming_request(self):
        body = {"rid": "to-abort", "text": "Once upon a time", "stream": True,
                "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True}}
        stream = hh.StreamReader(self.server.url, body)
        self.assertTrue(stream.started.wait(60))
        aborted = self.server.post("/abort_request", {"rid": "to-abort"})
        self.assertEqual(aborted.json(), {"aborted": 1})
        self.assertTrue(stream.join(60))
        last = stream.events[-1]["meta_info"]
        self.assertEqual(last["finish_reason"]["type"], "abort")
        self.assertLess(last["completion_tokens"], 4000)
        self.assertEqual(last["weight_version"], "w0")
        self.assertEqual(self.server.post("/abort_request", {"rid": "to-abort"}).json(), {"aborted": 0})

    def test_health_generate(self):
        started = time.monotonic()
        self.assertEqual(self.get("/health_generate").text, "")
        self.assertLess(time.monotonic() - started, 30)

    def test_tokenize_and_detokenize_agree_with_generate(self):
        text = "The capital of France is"
        tokens = self.server.post("/tokenize", {"text": text}).json()
        reply = self.server.post("/generate", {"text": text, "sampling_params": {"max_new_tokens": 1}}).json()
        self.assertEqual(tokens["count"], reply["meta_info"]["prompt_tokens"])
        self.assertEqual(len(tokens["tokens"]), tokens["count"])
        self.assertEqual(self.server.post("/detokenize", {"tokens": tokens["tokens"]}).json(), {"text": text})
        batch = self.server.post("/tokenize", {"prompt": [text, "Hello"]}).json()
        self.assertEqual(batch["tokens"][0], tokens["tokens"])
        self.assertEqual(self.server.post("/detokenize", {"tokens": batch["tokens"]}).json()["text"], [text, "Hello"])
        outside = self.server.post("/detokenize", {"tokens": [10 ** 7]})
        self.assertEqual(outside.status_code, 400)
        self.assertIn("outside the vocabulary", outside.json()["error"]["message"])

    def test_model_and_server_info(self):
        model = self.get("/get_model_info").json()
        self.assertEqual(model["model_path"], hh.sp.MODEL)
        self.assertEqual(model["tokenizer_path"], hh.sp.TOKENIZER)
        self.assertTrue(model["is_generation"])
        self.assertEqual(model["weight_version"], "w0")
        self.assertEqual((model["num_moe_layers"], model["top_k"]), (self.golden["num_moe_layers"], self.golden["top_k"]))
        self.assertEqual(model["num_experts"], 16)
        meta = self.server.post("/generate", hh.golden_generate(self.golden["cases"][0], 2)).json()["meta_info"]
        self.assertEqual(meta["routed_experts_shape"][1:], [model["num_moe_layers"], model["top_k"]])

        server = self.get("/get_server_info").json()
        self.assertEqual(server["max_total_tokens"], 4096)
        self.assertEqual(server["max_total_num_tokens"], 4096)
        # The CPU keeps float32 K/V and no prefill budget beside decodes (a GPU: bf16 in bf16 products, 512).
        self.assertEqual(server["kv_cache_dtype"], "float32")
        self.assertEqual(server["max_prefill_tokens_in_effect"], 0)
        self.assertTrue(server["enable_return_routed_experts"])
        self.assertEqual(server["served_model_name"], hh.MODEL_NAME)
        self.assertEqual(server["weight_version"], "w0")
        self.assertEqual(server["max_req_len"], model["max_model_len"])
        models = self.get("/v1/models").json()
        self.assertEqual(models["data"][0]["max_model_len"], model["max_model_len"])


if __name__ == "__main__":
    hh.run_tests()
