"""`mx.callback`: checkpoints every `period` epochs, and MXNet's log lines."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

import minimx as mx
from minimx.model import BatchEndParam


def _acc(correct: int, total: int) -> mx.metric.Accuracy:
    metric = mx.metric.Accuracy()
    metric.sum_metric, metric.num_inst = correct, total
    return metric


def test_do_checkpoint_every_period(tmp_path: Path) -> None:
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    args = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    save = mx.callback.do_checkpoint(str(tmp_path / "net"), period=2)
    for epoch in range(5):
        save(epoch, net, args, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "net-0002.params", "net-0004.params", "net-symbol.json"]
    _, loaded, _ = mx.model.load_checkpoint(str(tmp_path / "net"), 4)
    assert loaded["fc_weight"].asnumpy().tolist() == [[1, 1, 1], [1, 1, 1]]


def test_speedometer_logs_every_frequent_batches(caplog: pytest.LogCaptureFixture) -> None:
    speed = mx.callback.Speedometer(batch_size=8, frequent=2)
    metric = _acc(3, 4)
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):
            speed(BatchEndParam(epoch=1, nbatch=nbatch, eval_metric=metric, locals={}))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("Epoch[1] Batch [0-2]\tSpeed: ")
    assert lines[0].endswith("samples/sec\taccuracy=0.750000")
    assert lines[1].startswith("Epoch[1] Batch [2-4]") and "accuracy=nan" in lines[1]


def test_log_train_metric_and_progress_bar(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        mx.callback.log_train_metric(period=1, auto_reset=True)(
            BatchEndParam(epoch=0, nbatch=3, eval_metric=_acc(1, 2), locals={}))
        mx.callback.ProgressBar(total=4, length=8)(
            BatchEndParam(epoch=0, nbatch=1, eval_metric=None, locals={}))
    assert [r.getMessage() for r in caplog.records] == [
        "Iter[0] Batch[3] Train-accuracy=0.500000", "[==------] 25%\r"]


def test_save_checkpoint_logs_the_params_file_once(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    # MXNet 1.9.1 logs in mx.model.save_checkpoint, so do_checkpoint logs through it.
    args = {"w": mx.nd.ones((2,))}
    with caplog.at_level(logging.INFO):
        mx.model.save_checkpoint(str(tmp_path / "a"), 3, None, args, {})
        mx.callback.do_checkpoint(str(tmp_path / "b"))(0, None, args, {})
    assert [r.getMessage() for r in caplog.records] == [
        f'Saved checkpoint to "{tmp_path}/a-0003.params"',
        f'Saved checkpoint to "{tmp_path}/b-0001.params"']


def test_log_validation_metrics_callback(caplog: pytest.LogCaptureFixture) -> None:
    log = mx.callback.LogValidationMetricsCallback()
    with caplog.at_level(logging.INFO):
        log(BatchEndParam(epoch=2, nbatch=5, eval_metric=_acc(1, 4), locals={}))
        log(BatchEndParam(epoch=2, nbatch=5, eval_metric=None, locals={}))
    assert [r.getMessage() for r in caplog.records] == ["Epoch[2] Validation-accuracy=0.250000"]
