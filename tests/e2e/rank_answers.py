"""What the e2e tests of ranks in processes (ep_processes_test.py, tp_processes_test.py) share: a server
on a fixture over ZeroMQ, and every golden case's answers from it alone, batched and from the prefix cache.
The moe-serve under test is the first command-line argument (or $MOE_SERVE); importing takes it off argv."""
import json
import os
import subprocess
import sys

import msgpack

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
LOG_LEVEL = os.environ.get("MOE_E2E_LOG_LEVEL", "warn")


def golden_of(model):
    with open(os.path.join(model, "golden.json")) as f:
        return json.load(f)


def start(model, *flags, chunk=512):
    """moe-serve on `model` speaking ZeroMQ on a free port: (process, port)."""
    port = sp.free_port()
    process = subprocess.Popen(
        [MOE_SERVE, "--model-path", model, "--tokenizer-path", sp.TOKENIZER, "--enable-return-routed-experts",
         "--max-total-tokens", "4096", "--chunked-prefill-size", str(chunk), "--log-level", LOG_LEVEL,
         "--port", "0", "--zmq-endpoint", f"tcp://127.0.0.1:{port}", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return process, port


def ask(test, sock, requests):
    """Sends every request at once; the replies by rid."""
    for request in requests:
        sock.send(msgpack.packb(request))
    replies = {}
    while len(replies) < len(requests):
        reply = sp.wait_for_reply(test, sock, 120)
        test.assertNotIn("error", reply, reply)
        replies[reply["meta_info"]["id"]] = reply
    return replies


def answers(test, model, flags, chunk=512):
    """Every golden case of `model` alone, then all at once twice (the second from the prefix cache):
    three lists of (output ids, routing rows, cached tokens), one per round, in case order."""
    g = golden_of(model)
    process, port = start(model, *flags, chunk=chunk)
    sock = sp.connect(port)
    try:
        rounds = []
        alone = []
        for i, case in enumerate(g["cases"]):
            rid = f"alone{i}"
            alone.append(ask(test, sock, [sp.golden_request(case, g["max_new_tokens"], rid)])[rid])
        rounds.append(alone)
        for name in ("batch", "cached"):
            replies = ask(test, sock, [sp.golden_request(case, g["max_new_tokens"], f"{name}{i}")
                                       for i, case in enumerate(g["cases"])])
            rounds.append([replies[f"{name}{i}"] for i in range(len(g["cases"]))])
    finally:
        sock.close()
        code, log = sp.terminate(process)
    test.assertEqual(code, 0, log)
    return [[(r["output_ids"], sp.zmq_client.routed_experts(r["meta_info"]).tolist(), r["meta_info"]["cached_tokens"])
             for r in one_round] for one_round in rounds]




def expect_splits_equal_one_process(test, fixtures, runs_of, flags=()):
    """For each fixture (a directory of tests/data), one process's answers (given `flags`), then those of
    every (split flags, prefill chunk) in runs_of(fixture), `flags` added: the same ids and routing rows in
    every round, the goldens (where no `flags` change the model's numbers), and the third round's prompts
    from the prefix cache."""
    for fixture in fixtures:
        model = os.path.join(sp.DATA, fixture)
        g = golden_of(model)
        one_process = answers(test, model, list(flags))
        for split, chunk in runs_of(fixture):
            with test.subTest(fixture=fixture, flags=[*flags, *split], chunk=chunk):
                got = answers(test, model, [*flags, *split], chunk)
                for round_index, (ours, theirs) in enumerate(zip(got, one_process)):
                    for i, ((ids, rows, cached), (ids1, rows1, _)) in enumerate(zip(ours, theirs)):
                        test.assertEqual(ids, ids1, f"round {round_index} case {i}")
                        test.assertEqual(rows, rows1, f"round {round_index} case {i}")
                        if not flags:
                            sp.expect_golden(test, g["cases"][i], ids, rows, g["max_new_tokens"])
                        if round_index == 2:
                            test.assertEqual(cached, len(g["cases"][i]["prompt_ids"]) - 1)
