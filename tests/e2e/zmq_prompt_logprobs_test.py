"""Logprobs over the ZeroMQ client protocol against a real moe-serve (pyzmq and msgpack, as any client):
output logprobs come as [logprob, id, text] triples with their top alternatives (output_top_logprobs), and
logprob_start_len gives the prompt's (input_token_logprobs, input_top_logprobs) exactly as /generate does:
teacher forcing a golden case returns its golden logprobs, the prompt's first token has nil; a start past
the prompt is an error reply naming the field and the server goes on.
Usage: zmq_prompt_logprobs_test.py PATH/TO/moe-serve"""
import sys
import unittest

import msgpack

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else "moe-serve"
M = 12


class ZmqLogprobs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port = sp.free_port()
        cls.server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint",
                              f"tcp://127.0.0.1:{cls.port}")
        cls.golden = sp.golden()

    @classmethod
    def tearDownClass(cls):
        code, log = sp.terminate(cls.server)
        if code != 0:
            raise AssertionError(f"moe-serve exited with {code}:\n{log}")

    def ask(self, request):
        sock = sp.connect(self.port)
        self.addCleanup(sock.close)
        sock.send(msgpack.packb(request))
        return sp.wait_for_reply(self, sock, 120)

    def test_output_triples_have_texts_and_top_alternatives(self):
        case = self.golden["cases"][1]
        request = sp.golden_request(case, self.golden["max_new_tokens"], "out")
        request.update(return_logprob=True, top_logprobs_num=3)
        meta = self.ask(request)["meta_info"]
        self.assertEqual(len(meta["output_token_logprobs"]), self.golden["max_new_tokens"])
        for i, (triple, top) in enumerate(zip(meta["output_token_logprobs"], meta["output_top_logprobs"])):
            logprob, token, text = triple
            self.assertEqual(token, case["output_ids"][i])
            self.assertAlmostEqual(logprob, case["output_logprobs"][i], delta=1e-3)
            self.assertIsInstance(text, str)
            self.assertEqual(len(top), 3)
            self.assertEqual(top[0], triple)

    def test_teacher_forcing_gives_the_golden_prompt_logprobs(self):
        for index, case in enumerate(self.golden["cases"]):
            with self.subTest(case=index):
                start = len(case["prompt_ids"])
                reply = self.ask({"rid": f"tf{index}", "input_ids": case["prompt_ids"] + case["output_ids"][:M],
                                  "return_logprob": True, "logprob_start_len": start, "top_logprobs_num": 2,
                                  "sampling_params": {"temperature": 0, "max_new_tokens": 1, "ignore_eos": True}})
                meta = reply["meta_info"]
                self.assertEqual(reply["output_ids"], [case["output_ids"][M]])
                self.assertEqual(len(meta["input_token_logprobs"]), M)
                for j, (triple, top) in enumerate(zip(meta["input_token_logprobs"], meta["input_top_logprobs"])):
                    self.assertEqual(triple[1], case["output_ids"][j])
                    self.assertAlmostEqual(triple[0], case["output_logprobs"][j], delta=1e-3)
                    self.assertEqual(top[0], triple)

    def test_start_zero_has_nil_first_and_a_start_past_the_prompt_is_refused(self):
        case = self.golden["cases"][2]
        reply = self.ask({"rid": "zero", "input_ids": case["prompt_ids"], "return_logprob": True,
                          "logprob_start_len": 0, "top_logprobs_num": 1,
                          "sampling_params": {"temperature": 0, "max_new_tokens": 1}})
        meta = reply["meta_info"]
        self.assertEqual([t[1] for t in meta["input_token_logprobs"]], case["prompt_ids"])
        self.assertIsNone(meta["input_token_logprobs"][0][0])
        self.assertIsNone(meta["input_top_logprobs"][0])
        refused = self.ask({"rid": "past", "input_ids": case["prompt_ids"], "return_logprob": True,
                            "logprob_start_len": len(case["prompt_ids"])})
        self.assertIn("error", refused)
        self.assertEqual(refused["error"]["code"], 400)
        self.assertIn("logprob_start_len", refused["error"]["message"])
        self.assertEqual(self.ask(sp.golden_request(case, 2, "after"))["meta_info"]["finish_reason"]["type"], "length")


if __name__ == "__main__":
    unittest.main()
