"""The trained code model (tests/data/code-moe) served with its own tokenizer: text prompts through
SGLang's /generate and OpenAI's /v1/completions give transformers' greedy tokens, text and routing (its
golden's), and STANDALONE speculation drafted by the trained draft (tests/data/code-moe-draft) gives
the same tokens and the target's routing. SIGTERM gives exit code 0.
Usage: code_model_test.py PATH/TO/moe-serve"""
import json
import os
import unittest

import http_harness as h
import serve_process as sp

MODEL = os.path.join(sp.DATA, "code-moe")
DRAFT = os.path.join(sp.DATA, "code-moe-draft")
with open(os.path.join(MODEL, "golden.json")) as f:
    GOLDEN = json.load(f)
NEW_TOKENS = GOLDEN["max_new_tokens"]
GREEDY = {"temperature": 0, "max_new_tokens": NEW_TOKENS, "ignore_eos": True, "skip_special_tokens": False}


class CodeModelTest(unittest.TestCase):
    def serve(self, *flags):
        return h.serve_for(self, MODEL, *flags)

    def test_text_prompts_give_the_golden_tokens_text_and_routing(self):
        server = self.serve()
        for case in GOLDEN["cases"]:
            with self.subTest(prompt=case["prompt"]):
                reply = server.post("/generate", {"text": case["prompt"], "sampling_params": GREEDY,
                                                  "return_routed_experts": True})
                self.assertEqual(reply.status_code, 200, reply.text)
                body = reply.json()
                self.assertEqual(body["meta_info"]["prompt_tokens"], len(case["prompt_ids"]))
                self.assertEqual(body["text"], case["output_text"])
                h.expect_golden(self, case, body["output_ids"], h.decode_routed_experts(body["meta_info"]),
                                NEW_TOKENS)

                reply = server.post("/v1/completions", {"model": h.MODEL_NAME, "prompt": case["prompt"],
                                                        "max_tokens": NEW_TOKENS, "temperature": 0,
                                                        "ignore_eos": True, "skip_special_tokens": False})
                self.assertEqual(reply.status_code, 200, reply.text)
                self.assertEqual(reply.json()["choices"][0]["text"], case["output_text"])

    def test_standalone_draft_gives_the_same_tokens_and_the_targets_routing(self):
        server = self.serve("--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", DRAFT)
        for case in GOLDEN["cases"]:
            with self.subTest(prompt=case["prompt"]):
                body = h.golden_reply(server, case, NEW_TOKENS)
                h.expect_golden(self, case, body["output_ids"], h.decode_routed_experts(body["meta_info"]),
                                NEW_TOKENS)
        self.assertGreater(server.metrics()["moe_spec_accepted_drafts_total"], 0)


if __name__ == "__main__":
    h.run_tests()
