"""SGLang's /generate called with Python requests, decoding meta_info.routed_experts with numpy as SGLang's
documentation shows: every golden case (one by one, concurrently and as one batch) gives the golden ids and
routing; the narrower dtypes and routed_experts_start_len give the same rows; a streamed response ends with
the non-streamed one's text, ids and routing (SGLang's cumulative convention), and its per-event rows, asked
for with "stream_routed_experts": "delta", concatenate to the same routing.
Usage: requests_test.py PATH/TO/moe-serve"""
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import requests

import http_harness as hh


def stream_events(url, body):
    """The JSON events of a streamed /generate, checking the SSE framing and the closing [DONE]."""
    events = []
    with requests.post(url, json=body, stream=True, timeout=120) as reply:
        reply.raise_for_status()
        # Bytes, not str: str.splitlines would also split at U+2028 and the like inside the JSON strings.
        lines = [line.decode() for line in reply.iter_lines() if line]
    assert lines[-1] == "data: [DONE]", lines[-1]
    for line in lines[:-1]:
        assert line.startswith("data: "), line
        events.append(json.loads(line[len("data: "):]))
    return events


class GenerateWithRequests(hh.ServerTest):
    def generate(self, body):
        reply = self.server.post("/generate", body)
        self.assertEqual(reply.status_code, 200, reply.text)
        return reply.json()

    def expect_case(self, case, reply):
        experts = hh.decode_routed_experts(reply["meta_info"])
        self.assertEqual(experts.dtype, np.int32)
        hh.expect_golden(self, case, reply["output_ids"], experts, self.golden["max_new_tokens"])

    def test_every_golden_case(self):
        for case in self.golden["cases"]:
            with self.subTest(prompt=case["prompt"][:30]):
                self.expect_case(case, self.generate(hh.golden_generate(case, self.golden["max_new_tokens"])))

    def test_golden_cases_sent_concurrently(self):
        cases = self.golden["cases"] * 2
        bodies = [hh.golden_generate(case, self.golden["max_new_tokens"]) for case in cases]
        with ThreadPoolExecutor(len(bodies)) as pool:
            replies = list(pool.map(self.generate, bodies))
        for case, reply in zip(cases, replies):
            self.expect_case(case, reply)

    def test_golden_cases_as_one_batch(self):
        cases = self.golden["cases"]
        body = hh.golden_generate(cases[0], self.golden["max_new_tokens"])
        body["input_ids"] = [case["prompt_ids"] for case in cases]
        replies = self.generate(body)
        self.assertEqual(len(replies), len(cases))
        for case, reply in zip(cases, replies):
            self.expect_case(case, reply)

    def test_narrow_dtypes_and_start_len_give_the_same_rows(self):
        case = self.golden["cases"][2]
        max_new = self.golden["max_new_tokens"]
        full = hh.decode_routed_experts(self.generate(hh.golden_generate(case, max_new))["meta_info"])
        # 16 experts fit a byte, so auto picks uint8.
        for dtype, expected in (("int16", np.int16), ("uint8", np.uint8), ("auto", np.uint8), ("int32", np.int32)):
            with self.subTest(dtype=dtype):
                meta = self.generate(hh.golden_generate(case, max_new, routed_experts_dtype=dtype))["meta_info"]
                self.assertEqual(meta["routed_experts_dtype"], np.dtype(expected).name)
                narrow = hh.decode_routed_experts(meta)
                self.assertEqual(narrow.dtype, expected)
                np.testing.assert_array_equal(narrow, full)
        for start in (0, 1, len(case["prompt_ids"]), len(full) - 1):
            with self.subTest(start=start):
                meta = self.generate(hh.golden_generate(case, max_new, routed_experts_start_len=start))["meta_info"]
                np.testing.assert_array_equal(hh.decode_routed_experts(meta), full[start:])

    def test_stream_concatenated_equals_the_whole_response(self):
        for case in (self.golden["cases"][1], self.golden["cases"][4]):
            body = hh.golden_generate(case, self.golden["max_new_tokens"])
            whole = self.generate(body)
            events = stream_events(self.server.url + "/generate", dict(body, stream=True))
            self.assertGreater(len(events), 1)
            # SGLang's stream repeats the cumulative text and ids; the final event carries the whole routing.
            for earlier, later in zip(events, events[1:]):
                self.assertTrue(later["text"].startswith(earlier["text"]))
                self.assertEqual(later["output_ids"][:len(earlier["output_ids"])], earlier["output_ids"])
                self.assertIsNone(earlier["meta_info"]["finish_reason"])
            self.assertEqual(events[-1]["text"], whole["text"])
            self.assertEqual(events[-1]["output_ids"], whole["output_ids"])
            self.assertEqual(events[-1]["meta_info"]["finish_reason"], whole["meta_info"]["finish_reason"])
            self.assertEqual(len({event["meta_info"]["id"] for event in events}), 1)
            for event in events[:-1]:
                self.assertNotIn("routed_experts", event["meta_info"])
            np.testing.assert_array_equal(hh.decode_routed_experts(events[-1]["meta_info"]),
                                          hh.decode_routed_experts(whole["meta_info"]))
            # "stream_routed_experts": "delta": each event its new rows, which concatenate to the whole.
            deltas = stream_events(self.server.url + "/generate",
                                   dict(body, stream=True, stream_routed_experts="delta"))
            rows = np.concatenate([hh.decode_routed_experts(event["meta_info"]) for event in deltas])
            np.testing.assert_array_equal(rows, hh.decode_routed_experts(whole["meta_info"]))


if __name__ == "__main__":
    hh.run_tests()
