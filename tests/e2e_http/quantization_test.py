"""moe-serve with --quantization, driven over HTTP as a client would: every golden prompt is answered
with routed experts of the right shape and the same tokens and routing on a second asking, after a
/update_weights_from_disk (which quantizes the new weights the same way) and with the prefix cache
flushed; /get_server_info reports the flags; an unknown --quantization stops the start with an error
naming it. (That the quantized model computes what its dequantized weights give is checked in-process
by tests/model/quantized_model_test.cpp.)
Usage: quantization_test.py PATH/TO/moe-serve"""
import unittest

import requests

import http_harness as hh


class QuantizedInt4Server(hh.ServerTest):
    extra_flags = ("--quantization", "int4", "--quantization-group-size", "32")

    def test_every_prompt_answered_with_routing_the_same_after_a_weight_update(self):
        first = hh.golden_answers(self.server, self.golden)
        for case, (ids, rows) in zip(self.golden["cases"], first):
            self.assertEqual(len(ids), 6)
            self.assertEqual(len(rows), len(case["prompt_ids"]) + 6 - 1)
            self.assertEqual({(len(row), len(row[0])) for row in rows}, {(self.golden["num_moe_layers"], self.golden["top_k"])})
        updated = self.server.post("/update_weights_from_disk", {"model_path": hh.sp.MODEL, "weight_version": "again"})
        self.assertTrue(updated.json()["success"], updated.text)
        self.server.post("/flush_cache", None).raise_for_status()
        self.assertEqual(hh.golden_answers(self.server, self.golden), first)

    def test_server_info_reports_the_quantization(self):
        info = requests.get(self.server.url + "/get_server_info", timeout=60).json()
        self.assertEqual(info["quantization"], "int4")
        self.assertEqual(info["quantization_group_size"], 32)


class BadQuantizationFlag(unittest.TestCase):
    def test_unknown_quantization_stops_the_start_naming_it(self):
        with self.assertRaises(RuntimeError) as failed:
            hh.Server(extra_flags=("--quantization", "int3"), startup_timeout_s=60)
        self.assertIn("--quantization 'int3'", str(failed.exception))


if __name__ == "__main__":
    hh.run_tests()
