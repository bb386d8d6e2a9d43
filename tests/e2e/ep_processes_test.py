"""Expert parallelism over processes on the CPU: `moe-serve --ep-size N` starts ranks 1..N-1 itself (each
its own process, holding only its experts; every MoE layer all-reduced in rank order over the host
communicator). For every fixture, through --ep-size 2, and 4 in prefill chunks of 7, every golden case
alone, all at once, and again from the prefix cache gets the ids and routing rows of one process (and the
goldens). Ranks started by hand meet rank 0 at --dist-init-addr, a tcp:// address only with the deployment's
--internal-key-file (a rank holding another key never joins); one whose settings differ, or one that
never comes, stops the start naming that rank; a rank killed while serving fails the requests in flight
with an error, never a wrong reply. --load-format dummy serves random weights made from a config.json
alone, alike through one process and two ranks.
Usage: ep_processes_test.py PATH/TO/moe-serve"""
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import msgpack

import serve_process as sp
from rank_answers import MOE_SERVE, answers, ask, expect_splits_equal_one_process, golden_of, start

FIXTURES = ["qwen3-moe-tiny", "qwen2-moe-tiny", "mixtral-tiny", "glm4-moe-tiny", "deepseek-v3-tiny"]


class ExpertRanksInProcesses(unittest.TestCase):
    def test_every_fixture_through_2_and_4_ranks_and_chunks_equals_one_process(self):
        # Every fixture's experts divide by 4.
        expect_splits_equal_one_process(self, FIXTURES, lambda _: [(["--ep-size", "2"], 512), (["--ep-size", "4"], 7)])

    def test_dummy_weights_from_a_config_alone_through_one_process_and_two_ranks(self):
        with tempfile.TemporaryDirectory() as config_only:
            shutil.copy(os.path.join(sp.MODEL, "config.json"), config_only)
            shutil.copy(os.path.join(sp.MODEL, "golden.json"), config_only)  # the prompts, not their answers
            flags = ["--load-format", "dummy", "--dummy-seed", "3"]
            one = answers(self, config_only, flags)
            two = answers(self, config_only, [*flags, "--ep-size", "2"])
        self.assertEqual([[(ids, rows) for ids, rows, _ in r] for r in one],
                         [[(ids, rows) for ids, rows, _ in r] for r in two])
        self.assertNotEqual(one[0][0][0], golden_of(sp.MODEL)["cases"][0]["output_ids"])  # other weights

    def key_file(self):
        """A new internal key (moe-serve --make-internal-key), removed after the test."""
        directory = tempfile.mkdtemp(prefix="moe-ep-key-")
        self.addCleanup(shutil.rmtree, directory)
        path = os.path.join(directory, "internal.key")
        subprocess.run([MOE_SERVE, "--make-internal-key", path], check=True, capture_output=True, timeout=60)
        return path

    def start_by_hand(self, rank0_flags, rank1_flags, timeout=120, rank1_key=None):
        """Rank 0 (the server) and rank 1 (--role worker) started by hand, meeting at a free port and
        holding the deployment's internal key (rank 1 `rank1_key` when given)."""
        key = self.key_file()
        meet = f"tcp://127.0.0.1:{sp.free_port()}"
        server, port = start(sp.MODEL, "--ep-size", "2", "--dist-init-addr", meet, "--dist-timeout", str(timeout),
                             "--internal-key-file", key, *rank0_flags)
        rank1 = None
        if rank1_flags is not None:
            rank1, _ = start(sp.MODEL, "--role", "worker", "--ep-size", "2", "--ep-rank", "1", "--dist-init-addr",
                             meet, "--dist-timeout", str(timeout), "--internal-key-file", rank1_key or key,
                             *rank1_flags)
        return server, rank1, port

    def test_ranks_over_tcp_authenticate_with_the_deployments_key(self):
        meet = f"tcp://127.0.0.1:{sp.free_port()}"
        keyless, _ = start(sp.MODEL, "--ep-size", "2", "--dist-init-addr", meet)
        log, _ = keyless.communicate(timeout=120)
        self.assertNotEqual(keyless.returncode, 0, log)
        self.assertIn("--dist-init-addr", log)
        self.assertIn("--internal-key-file", log)
        # A rank holding another key never joins: rank 0 waits out --dist-timeout naming it.
        server, stranger, _ = self.start_by_hand([], [], timeout=5, rank1_key=self.key_file())
        log, _ = server.communicate(timeout=240)
        self.assertNotEqual(server.returncode, 0, log)
        self.assertIn("expert-parallel rank 1 of 2 did not join", log)
        stranger_log, _ = stranger.communicate(timeout=240)
        self.assertNotEqual(stranger.returncode, 0, stranger_log)

    def test_a_rank_started_by_hand_with_other_settings_is_refused_by_name(self):
        server, rank1, _ = self.start_by_hand([], ["--kernel-dtype", "bf16"])
        for process in (server, rank1):
            log, _ = process.communicate(timeout=240)
            self.assertNotEqual(process.returncode, 0, log)
            self.assertIn("expert-parallel rank 1 differs from rank 0", log)
            self.assertIn("--kernel-dtype", log)

    def test_a_missing_rank_stops_the_start_naming_it(self):
        server, _, _ = self.start_by_hand([], None, timeout=2)
        log, _ = server.communicate(timeout=240)
        self.assertNotEqual(server.returncode, 0, log)
        self.assertIn("expert-parallel rank 1 of 2 did not join", log)

    def test_golden_by_hand_then_a_killed_rank_fails_requests_never_a_wrong_reply(self):
        server, rank1, port = self.start_by_hand([], [])
        sock = sp.connect(port)
        try:
            g = sp.golden()
            case = g["cases"][0]
            reply = ask(self, sock, [sp.golden_request(case, g["max_new_tokens"], "before")])["before"]
            sp.expect_golden(self, case, reply["output_ids"], sp.zmq_client.routed_experts(reply["meta_info"]),
                             g["max_new_tokens"])
            rank1.send_signal(signal.SIGKILL)
            rank1.wait(30)
            request = sp.golden_request(case, 64, "after")
            request["input_ids"] = case["prompt_ids"] + [7, 8, 9]  # not all from the prefix cache
            sock.send(msgpack.packb(request))
            failed = sp.wait_for_reply(self, sock, 120)
            self.assertIn("error", failed, failed)
        finally:
            sock.close()
            sp.terminate(server)
            if rank1.poll() is None:
                rank1.kill()
            rank1.communicate()


if __name__ == "__main__":
    unittest.main()
