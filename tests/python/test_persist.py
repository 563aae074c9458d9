"""ftrt.load_persisted on versions written by persist/'s own writer
(tests/mpi/persist-write, no job): every byte of global tensors put
together from uneven, overlapping slices and of private buffers per rank;
like= viewing them as a model's state dict (load_state_dict takes it),
and refusing a private buffer whose ranks differ unless a rank is given; a
flipped byte raising FT_ECORRUPT naming the file, and the default version
falling back to the newest good one with a warning; a missing slice, a
missing version, a size that differs, a bad argument.  Run by
tests/python/run.sh (pytest); needs the build tree (FTRT_TOP_BUILDDIR)."""
import os
import subprocess

import pytest
import torch

import ftrt

BLD = os.environ.get("FTRT_TOP_BUILDDIR", "")
WRITER = os.path.join(BLD, "tests", "mpi", "persist-write")
JOB = "py-persist"
pytestmark = pytest.mark.skipif(not os.access(WRITER, os.X_OK),
                                reason=f"{WRITER} not built")


def writer(*args):
    return subprocess.run([WRITER, *map(str, args)], check=True,
                          capture_output=True).stdout


def expect(name, rank, version):
    return writer("expect", name, rank, version)


def layout():
    rows = writer("layout").decode().splitlines()
    return [(n, r if r == "global" else int(r), int(b))
            for n, r, b in (row.split("\t") for row in rows)]


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "persist"
    r.mkdir(mode=0o700)
    writer("write", r, JOB, 1, 1)
    writer("write", r, JOB, 2, 1)
    return r


def flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)[0]
        f.seek(at)
        f.write(bytes([b ^ 0x10]))


def test_every_byte_of_the_newest_version(root):
    got = ftrt.load_persisted(root, JOB)
    assert (got.dir, got.version, got.step, got.epoch, got.nranks) == \
        ("v2.e1", 2, 20, 1, 4)
    n = 0
    for name, rank, nbytes in layout():
        t = got[name] if rank == "global" else got[name][rank]
        assert t.dtype == torch.uint8 and t.shape == (nbytes,), name
        assert t.numpy().tobytes() == expect(name, rank, 2), (name, rank)
        n += 1
    assert n == 20
    assert set(got[".."]) == {3} and set(got["empty"]) == {0}
    assert set(got["layer/../x"]) == {0, 1, 2, 3}


def test_one_rank_and_an_older_version(root, monkeypatch):
    monkeypatch.setenv("FT_PERSIST_DIR", str(root))
    monkeypatch.setenv("FT_JOB", JOB)
    got = ftrt.load_persisted(version=1, rank=2)
    assert got.version == 1
    assert ".." not in got and "empty" not in got
    assert got["counters"].numpy().tobytes() == expect("counters", 2, 1)
    assert got["w"].numpy().tobytes() == expect("w", "global", 1)
    assert ftrt.load_persisted(version="v1.e1").dir == "v1.e1"


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2, bias=False)
        self.bn = torch.nn.Module()
        self.bn.register_buffer("num_batches_tracked",
                                torch.tensor(0, dtype=torch.long))


def test_like_a_models_state_dict(root):
    m = Model()
    got = ftrt.load_persisted(root, JOB, like=m.state_dict())
    assert set(got) == {"fc.weight", "bn.num_batches_tracked"}
    w, nbt = got["fc.weight"], got["bn.num_batches_tracked"]
    assert w.dtype == torch.float32 and w.shape == (2, 3)
    assert nbt.dtype == torch.long and nbt.shape == ()
    assert w.view(torch.uint8).numpy().tobytes() == \
        expect("model.fc.weight", 0, 2)
    m.load_state_dict(got)
    assert torch.equal(m.fc.weight.detach().view(torch.uint8).flatten(),
                       w.view(torch.uint8).flatten())
    # a name registered as it is (no prefix), from one rank, any dtype
    c = ftrt.load_persisted(root, JOB, like={
        "counters": torch.zeros(2, dtype=torch.int64)}, rank=3)
    assert c["counters"].numpy().tobytes() == expect("counters", 3, 2)
    # a global tensor viewed as 2-D float32
    g = ftrt.load_persisted(root, JOB, like={
        "w": torch.zeros(2, 10498104 // 8, dtype=torch.float32)})
    assert g["w"].shape == (2, 1312263)
    assert g["w"].view(torch.uint8).numpy().tobytes() == expect("w", "global", 2)


def test_like_refuses_what_does_not_match(root):
    sd = {"fc.weight": torch.zeros(2, 3), "fc.bias": torch.zeros(2)}
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, JOB, like=sd)
    assert e.value.name == "FT_ENOENT"
    assert "'fc.bias' (as 'model.fc.bias' or 'fc.bias')" in str(e.value)
    assert set(ftrt.load_persisted(root, JOB, like=sd, strict=False)) == \
        {"fc.weight"}
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, JOB, like={"fc.weight": torch.zeros(3, 3)})
    assert e.value.name == "FT_EMISMATCH"
    assert "(3, 3) torch.float32 (36 bytes)" in str(e.value)
    assert "holds 24 bytes" in str(e.value)


def test_like_never_takes_one_ranks_private_bytes_silently(root):
    """'counters' is private and differs on every rank: like= without a
    rank refuses rather than return rank 0's; replicas that agree (the
    model's weights, the same on every rank) come back as they are."""
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, JOB, like={
            "counters": torch.zeros(2, dtype=torch.int64)})
    assert e.value.name == "FT_EMISMATCH"
    assert "hold different bytes for 'counters'" in str(e.value)
    assert "pass rank=R" in str(e.value)


def test_a_flipped_byte(root):
    flip(root / JOB / "v2.e1" / "rank1", 4300000)
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, JOB, version=2)
    assert e.value.name == "FT_ECORRUPT"
    assert f"{root}/{JOB}/v2.e1/rank1: block 1" in str(e.value)
    with pytest.warns(RuntimeWarning, match="v2.e1 skipped: .*rank1: block 1"):
        got = ftrt.load_persisted(root, JOB)
    assert got.version == 1
    assert got["w"].numpy().tobytes() == expect("w", "global", 1)


def test_a_missing_slice(root):
    writer("write", root, JOB, 3, 2, "--gap")
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, JOB)
    assert e.value.name == "FT_EMISMATCH"
    assert "global tensor 'w' (10498104 bytes): bytes 7500000..9000000 are " \
        "in no rank's slice" in str(e.value)


def test_bad_arguments(root, tmp_path, monkeypatch):
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, JOB, version=7)
    assert e.value.name == "FT_ENOENT"
    assert "no complete version numbered '7'; the newest is v2.e1" in \
        str(e.value)
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(tmp_path / "nowhere", JOB)
    assert e.value.name == "FT_ENOENT"
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, "other-job")
    assert e.value.name == "FT_ENOENT"
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(root, JOB, version="seven")
    assert e.value.name == "FT_EINVAL"
    monkeypatch.delenv("FT_PERSIST_DIR", raising=False)
    with pytest.raises(ftrt.Error) as e:
        ftrt.load_persisted(job=JOB)
    assert e.value.name == "FT_EINVAL" and "FT_PERSIST_DIR" in str(e.value)
    root.chmod(0o777)
    try:
        with pytest.raises(ftrt.Error) as e:
            ftrt.load_persisted(root, JOB)
        assert e.value.name == "FT_ECONFIG"
    finally:
        root.chmod(0o700)
