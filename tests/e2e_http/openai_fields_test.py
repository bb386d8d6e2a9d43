"""OpenAI and SGLang fields beyond the basics, called with Python requests against moe-serve on the fixture
model: chat_template_kwargs reach the chat template, --chat-template replaces the tokenizer's template, top
logprobs lead with the greedy token at its golden logprob, penalties and logit_bias move the draw as
SGLang's formulas say, min_tokens holds back the end of sequence.
Usage: openai_fields_test.py PATH/TO/moe-serve"""
import os
import tempfile

import http_harness as hh
import serve_process as sp

# A template of our own for --chat-template: role-tagged turns, and an optional `prefix` variable that a
# request sets through chat_template_kwargs.
OWN_TEMPLATE = ("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
                "{% if add_generation_prompt %}[assistant]{% if prefix is defined %} {{ prefix }}{% endif %}{% endif %}")
TEMPLATE_DIR = tempfile.TemporaryDirectory(prefix="moe-chat-template-")
TEMPLATE_FILE = os.path.join(TEMPLATE_DIR.name, "own.jinja")
with open(TEMPLATE_FILE, "w") as f:
    f.write(OWN_TEMPLATE)


def greedy_chat(messages, max_tokens=6, **extra):
    body = {"model": hh.MODEL_NAME, "messages": messages, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True}
    body.update(extra)
    return body


class ChatTemplateKwargs(hh.ServerTest):
    def test_enable_thinking_false_renders_the_golden_prompt(self):
        # The golden chat cases were rendered by transformers' apply_chat_template(..., enable_thinking=False):
        # the reply to the same messages with the kwarg is the golden continuation of exactly that prompt.
        max_new = self.golden["max_new_tokens"]
        for index in (6, 7):
            case = self.golden["cases"][index]
            messages = hh.golden_chat_messages(case)
            with self.subTest(case=index):
                reply = self.server.post("/v1/chat/completions", greedy_chat(
                    messages, max_new, chat_template_kwargs={"enable_thinking": False}))
                self.assertEqual(reply.status_code, 200, reply.text)
                reply = reply.json()
                self.assertEqual(reply["usage"]["prompt_tokens"], len(case["prompt_ids"]))
                self.assertEqual(reply["choices"][0]["message"]["content"], case["output_text"])
                without = self.server.post("/v1/chat/completions", greedy_chat(messages, max_new)).json()
                self.assertEqual(without["usage"]["prompt_tokens"], len(case["prompt_ids"]) - 4)

    def test_bad_kwargs_are_refused_naming_the_field(self):
        messages = [{"role": "user", "content": "Hi"}]
        for kwargs in ("enable_thinking", [1], {"messages": []}):
            with self.subTest(kwargs=kwargs):
                reply = self.server.post("/v1/chat/completions", greedy_chat(messages, chat_template_kwargs=kwargs))
                self.assertEqual(reply.status_code, 400, reply.text)
                self.assertIn("chat_template_kwargs" if kwargs != {"messages": []} else "clashes", reply.text)


# The fixture model's end-of-sequence token (generation_config.json), <|im_end|>.
EOS = 151645


def counts_before(ids, i):
    counts = {}
    for token in ids[:i]:
        counts[token] = counts.get(token, 0) + 1
    return counts


class LogprobsAndSampling(hh.ServerTest):
    def completion(self, case, **fields):
        body = {"model": hh.MODEL_NAME, "prompt": case["prompt_ids"], "max_tokens": self.golden["max_new_tokens"],
                "temperature": 0, "ignore_eos": True}
        body.update(fields)
        reply = self.server.post("/v1/completions", body)
        self.assertEqual(reply.status_code, 200, reply.text)
        return reply.json()["choices"][0]

    def test_chat_top_logprobs_lead_with_the_greedy_token(self):
        case = self.golden["cases"][6]
        messages = [{"role": "user", "content": "Explain MoE models"}]
        reply = self.server.post("/v1/chat/completions", greedy_chat(
            messages, self.golden["max_new_tokens"], logprobs=True, top_logprobs=20,
            chat_template_kwargs={"enable_thinking": False}))
        self.assertEqual(reply.status_code, 200, reply.text)
        content = reply.json()["choices"][0]["logprobs"]["content"]
        self.assertEqual(len(content), len(case["output_ids"]))
        for i, entry in enumerate(content):
            with self.subTest(token=i):
                self.assertEqual(len(entry["top_logprobs"]), 20)
                first = entry["top_logprobs"][0]
                self.assertEqual(first["token"], entry["token"])
                self.assertEqual(first["logprob"], entry["logprob"])
                self.assertAlmostEqual(entry["logprob"], case["output_logprobs"][i], delta=1e-3)
                self.assertEqual(entry["bytes"], list(entry["token"].encode("utf-8")))
                ranked = [alt["logprob"] for alt in entry["top_logprobs"]]
                self.assertEqual(ranked, sorted(ranked, reverse=True))
        self.assertEqual("".join(entry["token"] for entry in content), case["output_text"])

    def test_generate_top_logprobs_and_token_ids_form(self):
        case = self.golden["cases"][1]
        reply = self.server.post("/generate", hh.golden_generate(
            case, self.golden["max_new_tokens"], return_logprob=True, top_logprobs_num=3,
            return_text_in_logprobs=True, logprob_start_len=-1)).json()
        meta = reply["meta_info"]
        self.assertEqual(reply["output_ids"], case["output_ids"])
        for i, (triple, top) in enumerate(zip(meta["output_token_logprobs"], meta["output_top_logprobs"])):
            self.assertEqual(top[0], triple)
            self.assertEqual(triple[1], case["output_ids"][i])
            self.assertAlmostEqual(triple[0], case["output_logprobs"][i], delta=1e-3)
            self.assertEqual(len(top), 3)
        choice = self.completion(case, logprobs=2, return_tokens_as_token_ids=True)
        self.assertEqual(choice["logprobs"]["tokens"], [f"token_id:{t}" for t in case["output_ids"]])
        for i, alternatives in enumerate(choice["logprobs"]["top_logprobs"]):
            self.assertEqual(max(alternatives, key=alternatives.get), f"token_id:{case['output_ids'][i]}")

    def test_penalties_pick_the_argmax_of_the_penalized_logprobs(self):
        # Cases 3 and 5 repeat tokens when greedy. Logprobs and logits differ by one constant per step, so
        # with frequency and presence penalties the chosen token must lead every reported alternative once
        # each is lowered by F x its count so far + P x (count > 0) (SGLang's formulas).
        for index in (3, 5):
            case = self.golden["cases"][index]
            for frequency, presence in ((0.5, 0.0), (0.0, 1.0), (0.3, 0.4)):
                with self.subTest(case=index, frequency=frequency, presence=presence):
                    choice = self.completion(case, logprobs=20, frequency_penalty=frequency,
                                             presence_penalty=presence, return_tokens_as_token_ids=True)
                    ids = [int(t.removeprefix("token_id:")) for t in choice["logprobs"]["tokens"]]
                    self.assertNotEqual(ids, case["output_ids"])
                    for i, (chosen, alternatives) in enumerate(zip(ids, choice["logprobs"]["top_logprobs"])):
                        counts = counts_before(ids, i)

                        def penalized(token, logprob):
                            n = counts.get(token, 0)
                            return logprob - frequency * n - presence * (n > 0)
                        best = penalized(chosen, choice["logprobs"]["token_logprobs"][i])
                        for name, logprob in alternatives.items():
                            self.assertLessEqual(penalized(int(name.removeprefix("token_id:")), logprob), best + 1e-4)
        # /generate takes the same fields in sampling_params.
        case = self.golden["cases"][5]
        plain = self.server.post("/generate", hh.golden_generate(case, 24)).json()
        penalized = self.server.post("/generate", {"input_ids": case["prompt_ids"], "sampling_params": {
            "temperature": 0, "max_new_tokens": 24, "ignore_eos": True, "repetition_penalty": 1.5}}).json()
        self.assertEqual(plain["output_ids"], case["output_ids"])
        self.assertNotEqual(penalized["output_ids"], case["output_ids"])

    def test_logit_bias_and_min_tokens(self):
        case = self.golden["cases"][0]
        choice = self.completion(case, max_tokens=5, logit_bias={"42": 100})
        self.assertEqual(choice["text"], "K" * 5)  # token 42 is "K"
        # The end of sequence, pushed to the top, stops at once; min_tokens holds it back that long.
        body = {"input_ids": case["prompt_ids"], "sampling_params": {
            "temperature": 0, "max_new_tokens": 10, "logit_bias": {str(EOS): 100}}}
        first = self.server.post("/generate", body).json()
        self.assertEqual(first["output_ids"], [EOS])
        body["sampling_params"]["min_new_tokens"] = 4
        held = self.server.post("/generate", body).json()
        self.assertEqual(len(held["output_ids"]), 5, held["output_ids"])
        self.assertNotIn(EOS, held["output_ids"][:4])
        self.assertEqual(held["output_ids"][4], EOS)
        self.assertEqual(held["meta_info"]["finish_reason"]["type"], "stop")
        chat = self.server.post("/v1/chat/completions", greedy_chat(
            [{"role": "user", "content": "Hi"}], 10, ignore_eos=False, min_tokens=3,
            logit_bias={str(EOS): 100})).json()
        self.assertEqual(chat["usage"]["completion_tokens"], 4)

    def test_bad_values_are_refused_naming_the_field(self):
        case = self.golden["cases"][0]
        for fields, named in (({"logprobs": 21}, "logprobs"), ({"logit_bias": {"151936": 1}}, "logit_bias"),
                              ({"logit_bias": {"5": 200}}, "logit_bias"), ({"presence_penalty": 3}, "presence_penalty"),
                              ({"repetition_penalty": -1}, "repetition_penalty")):
            with self.subTest(fields=fields):
                body = {"model": hh.MODEL_NAME, "prompt": case["prompt_ids"], "max_tokens": 2}
                body.update(fields)
                reply = self.server.post("/v1/completions", body)
                self.assertEqual(reply.status_code, 400, reply.text)
                self.assertIn(named, reply.text)
        # "x" is one token: prompt logprobs may start at 0 only.
        reply = self.server.post("/generate", {"text": "x", "return_logprob": True, "logprob_start_len": 1})
        self.assertEqual(reply.status_code, 400, reply.text)
        self.assertIn("logprob_start_len", reply.text)


class ChatTemplateFile(hh.ServerTest):
    extra_flags = ("--chat-template", TEMPLATE_FILE)

    def test_the_file_replaces_the_tokenizers_template(self):
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]
        for kwargs, rendered in (({}, "[system] Be brief.\n[user] Hello\n[assistant]"),
                                 ({"prefix": "Sure:"}, "[system] Be brief.\n[user] Hello\n[assistant] Sure:")):
            with self.subTest(kwargs=kwargs):
                chat = self.server.post("/v1/chat/completions",
                                        greedy_chat(messages, chat_template_kwargs=kwargs or None)).json()
                plain = self.server.post("/generate", {"text": rendered, "sampling_params": {
                    "temperature": 0, "max_new_tokens": 6, "ignore_eos": True}}).json()
                self.assertEqual(chat["usage"]["prompt_tokens"], plain["meta_info"]["prompt_tokens"])
                self.assertEqual(chat["choices"][0]["message"]["content"], plain["text"])

    def test_a_template_that_does_not_compile_stops_the_start(self):
        bad = os.path.join(TEMPLATE_DIR.name, "bad.jinja")
        with open(bad, "w") as f:
            f.write("{% for m in messages %}")
        for path, named in ((bad, "line 1"), (bad + ".absent", "bad.jinja.absent")):
            with self.subTest(path=path):
                # An endpoint, or the start would stop at reaching no client before it reads the template.
                endpoint = "ipc://" + os.path.join(TEMPLATE_DIR.name, "never-bound.sock")
                process = sp.start(hh.MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--chat-template", path,
                                   "--zmq-endpoint", endpoint)
                out, _ = process.communicate(timeout=60)
                self.assertNotEqual(process.returncode, 0, out)
                self.assertIn(named, out)


if __name__ == "__main__":
    hh.run_tests()
