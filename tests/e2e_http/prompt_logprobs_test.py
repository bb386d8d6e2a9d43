"""Prompt logprobs over HTTP, called with Python requests against moe-serve on the fixture model. Teacher
forcing: a golden case's prompt plus its first m golden outputs, sent with logprob_start_len at the first
output, returns those outputs' golden logprobs in meta_info.input_token_logprobs, each greedy token first
in input_top_logprobs; logprob_start_len 0 starts with a null entry; a list of prompts takes one start
each; bad starts are refused naming the field. OpenAI /v1/completions with echo repeats the prompt and,
with logprobs, its tokens' logprobs (the first null), streamed too.
Usage: prompt_logprobs_test.py PATH/TO/moe-serve"""
import json

import requests

import http_harness as hh

M = 12  # teacher-forced outputs per case


def teacher_forced(case, m=M, **extra):
    body = {"input_ids": case["prompt_ids"] + case["output_ids"][:m], "return_logprob": True,
            "logprob_start_len": len(case["prompt_ids"]), "top_logprobs_num": 2, "return_text_in_logprobs": True,
            "sampling_params": {"temperature": 0, "max_new_tokens": 1, "ignore_eos": True}}
    body.update(extra)
    return body


class GeneratePromptLogprobs(hh.ServerTest):
    def expect_teacher_forced(self, case, meta, m=M, skip=0):
        entries, tops = meta["input_token_logprobs"][skip:], meta["input_top_logprobs"][skip:]
        self.assertEqual(len(entries), m)
        self.assertEqual(len(tops), m)
        for j, (entry, top) in enumerate(zip(entries, tops)):
            logprob, token, text = entry
            self.assertEqual(token, case["output_ids"][j])
            self.assertAlmostEqual(logprob, case["output_logprobs"][j], delta=1e-3)
            self.assertIsInstance(text, str)
            self.assertEqual(top[0], entry)  # the greedy token leads its alternatives
            self.assertEqual(len(top), 2)

    def test_teacher_forcing_gives_the_golden_logprobs(self):
        for index, case in enumerate(self.golden["cases"]):
            with self.subTest(case=index):
                reply = self.server.post("/generate", teacher_forced(case))
                self.assertEqual(reply.status_code, 200, reply.text)
                body = reply.json()
                self.expect_teacher_forced(case, body["meta_info"])
                self.assertEqual(body["output_ids"], [case["output_ids"][M]])

    def test_a_batch_takes_one_start_per_prompt_and_start_zero_has_a_null_first_entry(self):
        a, b = self.golden["cases"][2], self.golden["cases"][5]
        body = teacher_forced(a)
        body["input_ids"] = [a["prompt_ids"] + a["output_ids"][:M], b["prompt_ids"] + b["output_ids"][:M]]
        body["logprob_start_len"] = [len(a["prompt_ids"]), 0]
        reply = self.server.post("/generate", body)
        self.assertEqual(reply.status_code, 200, reply.text)
        first, second = reply.json()
        self.expect_teacher_forced(a, first["meta_info"])
        meta = second["meta_info"]
        self.assertEqual(len(meta["input_token_logprobs"]), len(b["prompt_ids"]) + M)
        self.assertEqual(meta["input_token_logprobs"][0][:2], [None, b["prompt_ids"][0]])
        self.assertIsNone(meta["input_top_logprobs"][0])
        self.expect_teacher_forced(b, meta, skip=len(b["prompt_ids"]))

    def test_streamed_events_carry_them_from_the_first(self):
        case = self.golden["cases"][3]
        body = teacher_forced(case, stream=True)
        body["sampling_params"]["max_new_tokens"] = 3
        with requests.post(self.server.url + "/generate", json=body, stream=True, timeout=120) as reply:
            events = [json.loads(line[len(b"data: "):]) for line in reply.iter_lines() if line.startswith(b"data: {")]
        self.assertGreaterEqual(len(events), 2)
        self.assertEqual(events[-1]["output_ids"], case["output_ids"][M:M + 3])
        for event in events:
            self.expect_teacher_forced(case, event["meta_info"])

    def test_bad_starts_are_refused_naming_the_field(self):
        case = self.golden["cases"][1]
        prompt = len(case["prompt_ids"]) + M
        for start, needle in ((prompt, f"prompt has {prompt} tokens"), (-2, "got -2"), (1.5, "integer"),
                              ("0", "integer")):
            with self.subTest(start=start):
                reply = self.server.post("/generate", teacher_forced(case, logprob_start_len=start))
                self.assertEqual(reply.status_code, 400, reply.text)
                self.assertIn("logprob_start_len", reply.text)
                self.assertIn(needle, reply.text)
        # The server goes on serving.
        self.assertEqual(self.server.post("/generate", teacher_forced(case)).status_code, 200)


class CompletionEcho(hh.ServerTest):
    def completion(self, **fields):
        body = {"model": hh.MODEL_NAME, "prompt": "The capital of France is", "max_tokens": 3, "temperature": 0,
                "ignore_eos": True}
        body.update(fields)
        reply = self.server.post("/v1/completions", body)
        self.assertEqual(reply.status_code, 200, reply.text)
        return reply

    def test_echo_repeats_the_prompt_and_its_logprobs(self):
        plain = self.completion(logprobs=1).json()["choices"][0]
        echoed = self.completion(echo=True, logprobs=1).json()["choices"][0]
        self.assertEqual(echoed["text"], "The capital of France is" + plain["text"])
        tokens, logprobs = echoed["logprobs"]["tokens"], echoed["logprobs"]["token_logprobs"]
        prompt_tokens = self.server.post("/tokenize", {"prompt": "The capital of France is"}).json()["count"]
        self.assertEqual(len(tokens), prompt_tokens + 3)
        self.assertEqual("".join(tokens[:prompt_tokens]), "The capital of France is")
        self.assertIsNone(logprobs[0])
        self.assertIsNone(echoed["logprobs"]["top_logprobs"][0])
        self.assertTrue(all(isinstance(v, float) and v <= 0 for v in logprobs[1:]))
        self.assertEqual(tokens[prompt_tokens:], plain["logprobs"]["tokens"])
        for ours, theirs in zip(logprobs[prompt_tokens:], plain["logprobs"]["token_logprobs"]):
            self.assertAlmostEqual(ours, theirs, delta=1e-3)
        self.assertEqual(self.completion(echo=True).json()["choices"][0]["text"], echoed["text"])

    def test_streamed_echo_sends_the_prompt_first(self):
        reply = self.completion(echo=True, logprobs=1, stream=True)
        chunks = [json.loads(line[len(b"data: "):]) for line in reply.iter_lines() if line.startswith(b"data: {")]
        texts = [chunk["choices"][0]["text"] for chunk in chunks]
        self.assertTrue(texts[0].startswith("The capital of France is"))
        self.assertIsNone(chunks[0]["choices"][0]["logprobs"]["token_logprobs"][0])
        self.assertTrue(all(not t.startswith("The capital") for t in texts[1:]))

    def test_echo_of_token_ids_is_refused_naming_the_field(self):
        reply = self.server.post("/v1/completions", {"model": hh.MODEL_NAME, "prompt": [1, 2, 3], "echo": True})
        self.assertEqual(reply.status_code, 400, reply.text)
        self.assertIn("echo", reply.text)


if __name__ == "__main__":
    hh.run_tests()
