"""moe-serve with --kernel-dtype bf16, driven over HTTP as a client would: every golden prompt is
answered with routed experts of the right shape, the same tokens and routing on a second asking,
and a first token equal to the golden's wherever its greedy margin is wide (bf16 products move
greedy margins by up to 0.07; tests/model/bf16_model_test.cpp checks the model against the goldens
in full); the same for --kernel-dtype int8 over int4 weights (integer products, margins moved by up
to 0.22: tests/model/quantized_model_test.cpp); /get_server_info reports the flag; an unknown dtype,
bf16 with --quantization and int8 without it each stop the start with an error saying why. (bf16 with --device cuda runs: tests/cuda/cuda_bf16_test.cpp.)
Usage: kernel_dtype_test.py PATH/TO/moe-serve"""
import unittest

import requests

import http_harness as hh

# Greedy margins above this cannot flip: bf16 products moved the fixtures' prompt margins by at
# most 0.066 (tests/model/bf16_model_test.cpp's kLogitAllowance).
WIDE_MARGIN = 0.15


def answers_shaped_and_repeated(test):
    """Every golden prompt's answer, checked for its shape (6 tokens, P + 6 - 1 routing rows of
    layers x top-k) and asked again after a cache flush, which must give the same tokens and rows."""
    first = hh.golden_answers(test.server, test.golden)
    for case, (ids, rows) in zip(test.golden["cases"], first):
        test.assertEqual(len(ids), 6)
        test.assertEqual(len(rows), len(case["prompt_ids"]) + 6 - 1)
        test.assertEqual({(len(row), len(row[0])) for row in rows},
                         {(test.golden["num_moe_layers"], test.golden["top_k"])})
    test.server.post("/flush_cache", None).raise_for_status()
    test.assertEqual(hh.golden_answers(test.server, test.golden), first)
    return first


class Bf16Server(hh.ServerTest):
    extra_flags = ("--kernel-dtype", "bf16")

    def test_every_prompt_answered_alike_twice_with_wide_margin_tokens_as_the_golden(self):
        answers = answers_shaped_and_repeated(self)
        for case, (ids, _) in zip(self.golden["cases"], answers):
            if case["greedy_margin"][0] > WIDE_MARGIN:
                self.assertEqual(ids[0], case["output_ids"][0])

    def test_server_info_reports_the_kernel_dtype(self):
        info = requests.get(self.server.url + "/get_server_info", timeout=60).json()
        self.assertEqual(info["kernel_dtype"], "bf16")


# int4 weights with integer products: their greedy margins may also move by what int4 does to the
# weights, so only each answer's shape and its stability are checked, plus the reported dtype.
class Int8ProductsServer(hh.ServerTest):
    extra_flags = ("--quantization", "int4", "--kernel-dtype", "int8")

    def test_every_prompt_answered_alike_twice_with_routing_rows(self):
        answers_shaped_and_repeated(self)

    def test_server_info_reports_the_kernel_dtype(self):
        info = requests.get(self.server.url + "/get_server_info", timeout=60).json()
        self.assertEqual(info["kernel_dtype"], "int8")


class DefaultServerInfo(hh.ServerTest):
    def test_server_info_reports_float32(self):
        info = requests.get(self.server.url + "/get_server_info", timeout=60).json()
        self.assertEqual(info["kernel_dtype"], "float32")


class RefusedKernelDtypes(unittest.TestCase):
    def start_error(self, *flags):
        with self.assertRaises(RuntimeError) as failed:
            hh.Server(extra_flags=flags, startup_timeout_s=60)
        return str(failed.exception)

    def test_unknown_kernel_dtype_stops_the_start_naming_it(self):
        self.assertIn("--kernel-dtype 'fp16': expected float32, bf16 or int8", self.start_error("--kernel-dtype", "fp16"))

    def test_bf16_with_quantization_stops_the_start(self):
        self.assertIn("--kernel-dtype bf16 multiplies bf16 weights",
                      self.start_error("--kernel-dtype", "bf16", "--quantization", "int8"))


    def test_int8_products_without_quantized_weights_stop_the_start(self):
        self.assertIn("--kernel-dtype int8 multiplies int8/int4 weights", self.start_error("--kernel-dtype", "int8"))


if __name__ == "__main__":
    hh.run_tests()
