"""`gunicorn --preload` (the documented start command) loads the judge's model once in the
master and forks the workers: the encoder loaded before a fork must serve in the children,
each giving the parent's embeddings, without hanging (bench/web_memory.py measures what the
sharing saves)."""

import os
import signal

import numpy as np

from judge.encoder import get_encoder

TEXTS = ["Which loan status values count as a troubled loan?"] * 40 + ["What is the review year?"]


def test_an_encoder_loaded_before_fork_serves_in_the_children(tmp_path):
    expected = get_encoder().encode(TEXTS)
    children = []
    for i in range(3):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its file and exit code
            try:
                signal.alarm(60)  # a child that hangs in onnxruntime fails the test
                np.save(tmp_path / f"{i}.npy", get_encoder().encode(TEXTS))
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    for i in range(3):
        assert np.allclose(np.load(tmp_path / f"{i}.npy"), expected, atol=1e-6)
