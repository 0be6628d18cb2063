"""Label-noise streams and clean-label evaluation."""

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
from river import datasets, linear_model, metrics, preprocessing
from river import evaluate as river_evaluate

from robustream import RGDSVMClassifier
from robustream.datasets import fit_reference_boundary, make_gaussian_classes
from robustream.evaluate import holdout, noisy_stream, prequential


def test_flip_rate_seed_and_clean_labels():
    rows = [({"a": float(i)}, i % 2 == 0) for i in range(4000)]
    out = list(noisy_stream(rows, flip=0.2, seed=3))
    assert [y_clean for _, _, y_clean in out] == [y for _, y in rows]
    rate = sum(y_noisy != y_clean for _, y_noisy, y_clean in out) / len(out)
    assert 0.18 < rate < 0.22
    assert out == list(noisy_stream(rows, flip=0.2, seed=3))
    assert out != list(noisy_stream(rows, flip=0.2, seed=4))


def test_multiclass_flips_go_to_another_label():
    rows = [({"a": 1.0}, c) for c in "abc" * 1000]
    out = list(noisy_stream(rows, flip=0.5, labels="abc", seed=0))
    assert all(y_noisy in "abc" for _, y_noisy, _ in out)
    # a flip is drawn for half of the rows, and a flipped label is always another label
    changed = sum(yn != yc for _, yn, yc in out) / len(out)
    assert 0.46 < changed < 0.54, changed
    with pytest.raises(ValueError, match="not a bool"):
        list(noisy_stream(rows, flip=0.0))  # checked on every row, not only where a flip is drawn
    numpy_bools = [({"a": 1.0}, np.bool_(i % 2)) for i in range(100)]
    assert all(yn == (not yc) for _, yn, yc in noisy_stream(numpy_bools, flip=0.9999, seed=0))
    with pytest.raises(ValueError, match="flip"):
        noisy_stream(rows, flip=1.5)  # at the call, not at the first row


def test_multiclass_labels_are_checked_and_flips_do_not_depend_on_set_order():
    rows = [({"a": 1.0}, c) for c in ["dog", "cat"] * 5]
    with pytest.raises(ValueError, match="label 'cat' is not in labels"):
        list(noisy_stream(rows, flip=0.0, labels=["dog", "bird"]))  # every row, not only the flipped ones
    with pytest.raises(ValueError, match="at least two distinct labels"):
        noisy_stream(rows, flip=0.5, labels=["dog"])
    animals = ["ant", "bee", "cat", "dog", "eel", "fox"]
    rows = [({"a": 1.0}, c) for c in animals * 50]
    as_set = list(noisy_stream(rows, flip=0.5, labels=set(animals), seed=1))
    assert as_set == list(noisy_stream(rows, flip=0.5, labels=sorted(animals), seed=1))
    # the same flips under other string hashes (a set's order changes with PYTHONHASHSEED)
    script = (
        "from robustream.evaluate import noisy_stream\n"
        f"animals = {animals!r}\n"
        "rows = [({'a': 1.0}, c) for c in animals * 50]\n"
        "print([y for _, y, _ in noisy_stream(rows, flip=0.5, labels=set(animals), seed=1)])\n"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": str(h)},
                       capture_output=True, text=True, check=True).stdout
        for h in range(4)
    }  # fmt: skip
    assert outputs == {f"{[y for _, y, _ in as_set]}\n"}


def test_prequential_and_holdout_score_against_clean_labels():
    stream = list(noisy_stream(datasets.Phishing(), flip=0.3, seed=0))
    # a model that always says True scores the clean share of True, whatever the noisy labels say
    class Constant:
        def predict_one(self, x):
            return True

        def learn_one(self, x, y):
            pass

    share_true = sum(y for _, _, y in stream) / len(stream)
    assert prequential(Constant(), stream).get() == pytest.approx(share_true)
    acc = holdout(RGDSVMClassifier(rebuild_every=200), stream[:1000], [(x, y) for x, _, y in stream[1000:]])
    assert acc.get() > 0.75
    assert prequential(linear_model.LogisticRegression(), stream).get() > 0.7


class _Recorder:
    """Predicts the last label it learned (None before any) and records what it was taught."""

    def __init__(self):
        self.taught, self.last = [], None

    def predict_one(self, x):
        return self.last

    def learn_one(self, x, y):
        self.taught.append(y)
        self.last = y


def test_both_evaluations_teach_the_noisy_labels_and_prequential_predicts_first():
    rows = [({"a": float(i)}, i % 3 == 0) for i in range(300)]
    stream = list(noisy_stream(rows, flip=0.3, seed=5))
    noisy = [y for _, y, _ in stream]
    assert noisy != [y for _, _, y in stream]
    model = _Recorder()
    metric = prequential(model, stream)
    assert model.taught == noisy
    # predicting before learning: row i is predicted with row i-1's noisy label, scored on row i's clean one
    # (row 0 gets no prediction, None, and is not scored)
    expected = sum(stream[i - 1][1] == stream[i][2] for i in range(1, len(stream))) / (len(stream) - 1)
    assert metric.get() == pytest.approx(expected)
    model = _Recorder()
    holdout(model, stream[:200], [(x, y) for x, _, y in stream[200:]])
    assert model.taught == noisy[:200]


def test_a_noisy_stream_can_be_read_again_unless_its_source_is_one_shot():
    rows = [({"a": float(i)}, i % 3 == 0) for i in range(300)]
    stream = noisy_stream(rows, flip=0.3, seed=2)
    assert list(stream) == list(stream) == list(noisy_stream(rows, flip=0.3, seed=2))
    # two models in turn on the same stream: the second one sees the same rows, not an exhausted generator
    scores = [prequential(_Recorder(), stream).get() for _ in range(2)]
    assert scores[0] == scores[1] > 0.3
    one_shot = noisy_stream(iter(rows), flip=0.3, seed=2)
    assert list(one_shot) == list(stream)
    with pytest.raises(ValueError, match="stream: noisy_stream was given a one-shot iterator, already read"):
        prequential(_Recorder(), one_shot)


def test_evaluations_without_rows_raise():
    with pytest.raises(ValueError, match=r"stream: no rows \(a one-shot iterator already consumed\?\)"):
        prequential(_Recorder(), noisy_stream([]))
    consumed = (row for row in [({"a": 1.0}, True, True)])
    list(consumed)
    with pytest.raises(ValueError, match="stream: no rows"):
        prequential(_Recorder(), consumed)
    with pytest.raises(ValueError, match="test: no rows"):
        holdout(_Recorder(), [({"a": 1.0}, True, True)], [])
    with pytest.raises(ValueError, match="test: no rows"):
        holdout(_Recorder(), [], [])
    # an empty train is fine: it scores a model trained before
    model = _Recorder()
    model.last = True
    assert holdout(model, [], [({"a": 1.0}, True), ({"a": 2.0}, False)]).get() == 0.5


def test_probability_metrics_are_given_predict_proba_one_as_in_river():
    rows = list(itertools.islice(datasets.Phishing(), 400))

    def model():
        return preprocessing.StandardScaler() | linear_model.LogisticRegression()

    for metric in (metrics.ROCAUC, metrics.LogLoss, metrics.Accuracy):
        ours = prequential(model(), noisy_stream(rows, flip=0.0), metric=metric()).get()
        assert ours == river_evaluate.progressive_val_score(rows, model(), metric()).get(), metric
    stream = list(noisy_stream(rows, flip=0.2, seed=0))
    trained = model()
    for x, y, _ in stream[:300]:
        trained.learn_one(x, y)
    expected = metrics.LogLoss()
    for x, _, y in stream[300:]:
        expected.update(y, trained.predict_proba_one(x))
    got = holdout(model(), stream[:300], [(x, y) for x, _, y in stream[300:]], metric=metrics.LogLoss())
    assert got.get() == expected.get()
    with pytest.raises(TypeError, match="model: the metric ROCAUC scores probabilities, but the model has no "
                                        "predict_proba_one"):  # fmt: skip
        prequential(_Recorder(), stream, metric=metrics.ROCAUC())


def test_seed_takes_any_integer_and_nothing_else():
    rows = [({"a": float(i)}, i % 2 == 0) for i in range(200)]
    assert list(noisy_stream(rows, flip=0.3, seed=np.int64(7))) == list(noisy_stream(rows, flip=0.3, seed=7))
    for seed in (1.5, "abc", True, np.float64(1.0)):
        with pytest.raises(TypeError, match="seed must be an int or None, got"):
            noisy_stream(rows, seed=seed)  # at the call, not at the first row
    # None, as noisy_split takes it: other flips at each call, the same rows at every pass of one result
    fresh = [noisy_stream(rows, flip=0.3, seed=None) for _ in range(2)]
    assert list(fresh[0]) == list(fresh[0]) and list(fresh[0]) != list(fresh[1])


def test_rows_of_the_wrong_shape_are_named_with_the_expected_shape():
    pairs = [({"a": 1.0}, True), ({"a": 2.0}, False)]
    triples = list(noisy_stream(pairs, flip=0.0))
    with pytest.raises(ValueError, match=r"^stream: prequential expects \(x, y_noisy, y_clean\) rows, e\.g\. from "
                                         r"noisy_stream; got a 2-tuple$"):  # fmt: skip
        prequential(_Recorder(), pairs)
    with pytest.raises(ValueError, match=r"^test: holdout expects clean \(x, y\) rows .*; got a 3-tuple$"):
        holdout(_Recorder(), triples, triples)
    with pytest.raises(ValueError, match=r"^train: holdout expects \(x, y_noisy, y_clean\) rows.*; got a list of "
                                         r"length 2$"):  # fmt: skip
        holdout(_Recorder(), [list(row) for row in pairs], pairs)
    with pytest.raises(ValueError, match=r"^stream: noisy_stream expects \(x, y\) rows; got a 3-tuple$"):
        list(noisy_stream(triples))
    with pytest.raises(TypeError, match=r"^stream: prequential expects .*; got a float$"):
        prequential(_Recorder(), [1.0])
    with pytest.raises(ValueError, match=r"label 0 is not a bool: the labels must be bools, or be listed with "
                                         r"labels=\[\.\.\.\] \(labels=\[0, 1\] for a 0/1 stream"):  # fmt: skip
        list(noisy_stream([({"a": 1.0}, 0), ({"a": 2.0}, 1)]))


def test_a_row_without_a_prediction_is_not_scored_as_in_river():
    # a multi-class model predicts None until it has learned a class; River does not score those rows
    rows = [({"a": float(i % 7), "b": float(i % 3)}, "abc"[i % 3]) for i in range(300)]

    def model():
        return preprocessing.StandardScaler() | linear_model.SoftmaxRegression()

    assert model().predict_one(rows[0][0]) is None  # the case this test is about
    for metric in (metrics.Accuracy, metrics.MacroF1):
        ours = prequential(model(), noisy_stream(rows, flip=0.0, labels="abc"), metric=metric()).get()
        assert ours == river_evaluate.progressive_val_score(rows, model(), metric()).get(), metric
    never = _Recorder()
    never.predict_one = lambda x: None
    assert holdout(never, [], [({"a": 1.0}, True)]).cm.total_weight == 0


def test_a_metric_class_or_a_stream_that_is_not_one_is_named():
    rows = [({"a": 1.0}, True), ({"a": 2.0}, False)]
    with pytest.raises(TypeError, match=r"^metric: give a metric instance, for example Accuracy\(\), not the class$"):
        prequential(_Recorder(), noisy_stream(rows), metric=metrics.Accuracy)
    with pytest.raises(TypeError, match=r"^metric: str has no update method"):
        holdout(_Recorder(), [], rows, metric="accuracy")
    with pytest.raises(TypeError, match=r"^stream: noisy_stream expects an iterable of \(x, y\) rows, got NoneType$"):
        noisy_stream(None)  # at the call, not when read


def test_adversarial_stream_flips_the_rows_of_one_class_farthest_on_the_correct_side():
    # noisy_stream had uniform flips only
    X, y = make_gaussian_classes(300, d=4, seed=2)
    rows = [({f"f{j}": float(v) for j, v in enumerate(x)}, bool(label > 0)) for x, label in zip(X, y)]
    for cls in (True, False):
        out = list(noisy_stream(rows, flip=0.1, noise="adversarial", adversarial_class=cls))
        assert out == list(noisy_stream(rows, flip=0.1, noise="adversarial", adversarial_class=cls, seed=7))
        assert [(x, y_clean) for x, _, y_clean in out] == rows
        flipped = np.array([y_noisy != y_clean for _, y_noisy, y_clean in out])
        assert flipped.sum() == round(0.1 * len(rows))
        assert all(rows[i][1] is cls for i in np.flatnonzero(flipped))
        w, b = fit_reference_boundary(X, y)  # the same boundary, from the matrix (features in key order)
        margins = (1.0 if cls else -1.0) * (X @ w + b)
        kept = np.array([label is cls for _, label in rows]) & ~flipped
        assert margins[flipped].min() > margins[kept].max()
    with pytest.raises(ValueError, match="noise='adversarial' flips bool labels"):
        noisy_stream(rows, noise="adversarial", labels=[True, False])
    with pytest.raises(ValueError, match=r"stream: row 1: feature 'a' is not a finite number: nan"):
        list(noisy_stream([({"a": 1.0}, True), ({"a": float("nan")}, False)], flip=0.5, noise="adversarial"))
    with pytest.warns(RuntimeWarning, match="only 1 rows of class True but 2 flips"):
        out = list(noisy_stream([({"a": 1.0}, True)] + [({"a": -1.0}, False)] * 3, flip=0.5, noise="adversarial"))
    assert [y for _, y, _ in out] == [False] * 4


def test_labels_listed_twice_and_negative_seeds_are_refused():
    # "b" listed twice was drawn twice as often as "c"; seed -5 drew what seed 5 does
    rows = [({"a": 1.0}, "a")] * 10
    with pytest.raises(ValueError, match=r"labels: 'b' is listed more than once"):
        noisy_stream(rows, flip=0.5, labels=["a", "b", "b", "c"])
    with pytest.raises(ValueError, match="seed must be >= 0, got -5"):
        noisy_stream(rows, flip=0.5, seed=-5, labels="abc")


def test_wrong_labels_drawn_from_labels_keep_the_type_of_the_streams_labels():
    rows = [({"a": float(i)}, i % 2 == 0) for i in range(60)]
    out = list(noisy_stream(rows, flip=0.5, seed=0, labels=[0, 1]))
    assert sum(y_noisy != y_clean for _, y_noisy, y_clean in out) > 10
    assert {type(y_noisy) for _, y_noisy, _ in out} == {bool}
    rows = [({"a": float(i)}, np.int64(i % 3)) for i in range(60)]
    assert {type(y) for _, y, _ in noisy_stream(rows, flip=0.5, seed=0, labels=[0, 1, 2])} == {np.int64}
    rows = [({"a": float(i)}, i % 2 == 0) for i in range(60)]  # 2 is no bool: it stays 2
    assert 2 in {y for _, y, _ in noisy_stream(rows, flip=0.5, seed=0, labels=[True, False, 2])}
