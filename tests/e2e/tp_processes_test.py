"""Tensor parallelism over processes on the CPU: `moe-serve --tp-size N` starts ranks 1..N-1 itself, each
holding its share of every attention's heads (KV heads replicated where the ranks outnumber them), of every
MLP's and expert's intermediate width and of lm_head's vocabulary; each layer's partial outputs are
all-reduced in rank order over the host communicator and the logits gathered. With --ep-size E beside it,
N × E ranks: the routed experts split E ways by expert and each expert's width N ways, the rest over all
the ranks. For every fixture (latent attention included: its heads split, its latent whole), through
--tp-size 2 and through --tp-size 2 --ep-size 2 in prefill chunks of 7 (and 4, where 2 KV heads meet 4
ranks, for two of them), every golden case alone, all at once, and again from the prefix cache gets the
ids and routing rows of one process (and the goldens); with --quantization int8 and int4, through
--tp-size 2, those of one process quantized alike. Sizes that do not split are refused at
start, and so are GPU ranks where NCCL or the GPUs are missing; a rank started by hand with other
settings (sizes included), for another group size, or not at all stops the start naming that rank.
Usage: tp_processes_test.py PATH/TO/moe-serve"""
import unittest

import serve_process as sp
from rank_answers import expect_splits_equal_one_process, start

FIXTURES = ["qwen3-moe-tiny", "qwen2-moe-tiny", "mixtral-tiny", "glm4-moe-tiny", "deepseek-v3-tiny"]
FOUR_RANKS = {"qwen3-moe-tiny", "glm4-moe-tiny"}  # 4 query heads, 2 KV heads: each KV head on two ranks


def refusal(test, *flags):
    """The log of a start on the tiny Qwen3-MoE that must fail."""
    process, _ = start(sp.MODEL, *flags)
    log, _ = process.communicate(timeout=240)
    test.assertNotEqual(process.returncode, 0, log)
    return log


class TensorRanksInProcesses(unittest.TestCase):
    def test_every_fixture_through_2_and_4_ranks_and_2_by_2_equals_one_process(self):
        expect_splits_equal_one_process(self, FIXTURES, lambda fixture: [
            (["--tp-size", "2"], 7), (["--tp-size", "2", "--ep-size", "2"], 7)] + (
            [(["--tp-size", "4"], 512)] if fixture in FOUR_RANKS else []))

    def test_quantized_ranks_equal_one_process_quantized_alike(self):
        # Each rank's block of a row-parallel matrix keeps the whole rows' integers and scales (int4 in
        # groups of 128: every width of these fixtures lies within one group).
        for quantization in ("int8", "int4"):
            expect_splits_equal_one_process(self, ["qwen3-moe-tiny", "deepseek-v3-tiny"],
                                            lambda _: [(["--tp-size", "2"], 7)], flags=["--quantization", quantization])

    def test_sizes_that_do_not_split_are_refused_before_any_rank_starts(self):
        self.assertIn("4 attention heads cannot be split evenly over 3 tensor-parallel ranks",
                      refusal(self, "--tp-size", "3"))
        # GPU ranks need NCCL and a GPU each: a machine without them says which is missing.
        self.assertRegex(refusal(self, "--tp-size", "2", "--device", "cuda"),
                         "built without NCCL|no CUDA backend|GPU ranks .* need as many GPUs")
        self.assertIn("4 attention heads cannot be split evenly over 6 ranks (--tp-size 2 × --ep-size 3)",
                      refusal(self, "--tp-size", "2", "--ep-size", "3"))

    def start_by_hand(self, group, ranks, timeout=120):
        """Rank 0 (the server, given `group`) and a --role worker for each entry of `ranks` (its flags),
        started by hand at a free port, all holding the deployment's internal key."""
        meet = f"tcp://127.0.0.1:{sp.free_port()}"
        common = ["--dist-init-addr", meet, "--dist-timeout", str(timeout), "--internal-key-file", sp.KEY_FILE]
        server, _ = start(sp.MODEL, *group, *common)
        return server, [start(sp.MODEL, "--role", "worker", *common, *flags)[0] for flags in ranks]

    def test_a_rank_started_by_hand_with_other_settings_is_refused_by_name(self):
        server, (rank1,) = self.start_by_hand(["--tp-size", "2"],
                                              [["--tp-size", "2", "--tp-rank", "1", "--kernel-dtype", "bf16"]])
        for process in (server, rank1):
            log, _ = process.communicate(timeout=240)
            self.assertNotEqual(process.returncode, 0, log)
            self.assertIn("tensor-parallel rank 1 differs from rank 0", log)
            self.assertIn("--kernel-dtype", log)

    def test_a_rank_of_another_group_size_or_none_stops_the_start_naming_it(self):
        server, (rank1,) = self.start_by_hand(["--tp-size", "2"], [["--tp-size", "4", "--tp-rank", "1"]], timeout=20)
        log, _ = server.communicate(timeout=240)
        self.assertNotEqual(server.returncode, 0, log)
        self.assertIn("tensor-parallel rank 1 was started for a group of 4 but rank 0's has 2", log)
        self.assertIn("tensor-parallel rank 1 of 2 did not join", log)
        rank1.communicate(timeout=60)
        self.assertNotEqual(rank1.returncode, 0)

    def test_a_2_by_2_rank_of_other_sizes_or_none_is_named_by_both_its_ranks(self):
        # Rank 2 of 4 by --ep-size 4 alone, so the same place in a group of the same size; rank 3 never comes.
        server, ranks = self.start_by_hand(["--tp-size", "2", "--ep-size", "2"], [
            ["--tp-size", "2", "--ep-size", "2", "--tp-rank", "1"], ["--ep-size", "4", "--ep-rank", "2"]], timeout=20)
        log, _ = server.communicate(timeout=240)
        self.assertNotEqual(server.returncode, 0, log)
        self.assertIn("rank 2 (expert-parallel rank 1, tensor-parallel rank 0) differs from rank 0", log)
        self.assertIn("--ep-size", log)
        self.assertIn("--tp-size", log)
        self.assertIn("rank 3 (expert-parallel rank 1, tensor-parallel rank 1) of 4 did not join", log)
        for rank in ranks:
            rank_log, _ = rank.communicate(timeout=60)
            self.assertNotEqual(rank.returncode, 0, rank_log)

if __name__ == "__main__":
    unittest.main()
