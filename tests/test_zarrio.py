"""The small-array helpers every checkpoint writes through (anchorstream/zarrio.py)."""

from __future__ import annotations

import icechunk
import numpy as np
import pytest
import zarr

from anchorstream.zarrio import get, get_groups, put_many


def test_arrays_with_an_empty_axis_round_trip_through_icechunk():
    # A segment of document statistics can hold no columns: a chunk edge of 0 made Icechunk
    # refuse the checkpoint ("Invalid chunk grid metadata"; found by
    # tests/test_docstats.py's crash-and-replay property test).
    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    group = zarr.open_group(session.store, mode="a").create_group("g")
    data = {"no_columns": np.zeros((3, 0)), "empty": np.zeros((0, 0), dtype=np.int64),
            "no_rows": np.zeros((0, 4), dtype=np.float32), "full": np.arange(6.0).reshape(3, 2)}
    put_many([(group, name, value) for name, value in data.items()])
    session.commit("arrays")
    root = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    for name, value in data.items():
        out = get(root["g"], name)
        assert out.shape == value.shape and out.dtype == value.dtype
        np.testing.assert_array_equal(out, value)


def test_get_groups_reads_each_groups_arrays_and_skips_only_optional_ones_it_lacks():
    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    root = zarr.open_group(session.store, mode="a")
    a, b = root.create_group("s/a"), root.create_group("s/b")
    put_many([(a, "x", np.arange(3)), (a, "m", np.ones((2, 0))), (a, "extra", np.arange(2.0)),
              (b, "x", np.arange(5)), (b, "m", np.eye(2))])
    session.commit("groups")
    root = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    got = get_groups(root, ["s/a", "s/b"], ["x", "m"], optional=["extra"])
    assert [sorted(g) for g in got] == [["extra", "m", "x"], ["m", "x"]]
    np.testing.assert_array_equal(got[0]["x"], np.arange(3))
    assert got[0]["m"].shape == (2, 0)
    np.testing.assert_array_equal(got[0]["extra"], np.arange(2.0))
    np.testing.assert_array_equal(got[1]["m"], np.eye(2))
    with pytest.raises(KeyError):
        get_groups(root, ["s/a", "s/b"], ["x", "extra"])
